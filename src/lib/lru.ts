/**
 * A Map bounded to `max` entries that forgets the least recently used one first. A Map iterates
 * in insertion order, so a hit re-inserts its key and the first key is always the oldest.
 */
export function createLru<K, V>(max: number, onEvict: (key: K, value: V) => void = () => undefined) {
  const map = new Map<K, V>();
  return {
    get(key: K): V | undefined {
      const value = map.get(key);
      if (value !== undefined) {
        map.delete(key);
        map.set(key, value);
      }
      return value;
    },
    set(key: K, value: V): void {
      map.delete(key);
      map.set(key, value);
      if (map.size <= max) return;
      const [oldest, evicted] = map.entries().next().value as [K, V];
      map.delete(oldest);
      onEvict(oldest, evicted);
    },
    delete: (key: K) => map.delete(key),
    clear: () => map.clear(),
    get size() {
      return map.size;
    },
  };
}
