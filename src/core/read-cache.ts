import { createLru } from '../lib/lru.js';

/** Bounds memory: a page of 20 services is tens of kilobytes. */
export const READ_CACHE_ENTRIES = 500;

/** A table a cached answer was read from, as the store names it in its change notices (drizzle/0015_table_notices.sql). */
export type CachedTable = 'services' | 'deploys' | 'audit_logs' | 'blueprints' | 'blueprint_resources';

interface Entry {
  value: unknown;
  tables: readonly CachedTable[];
  expiresAtMs: number;
}

/**
 * Answers of list routes, kept until a table they were read from changes, so a list read again costs no query.
 * The store's triggers NOTIFY a table's name whenever any statement writes it, whoever runs it; `onNotify` hears
 * them. A change committed by this process is heard before its commit returns (src/store/db.ts), so a request
 * that follows a write by this process never sees the old page; other processes hear it within the NOTIFY's
 * delivery. `ttlMs` bounds how long an entry lives anyway (0 turns caching off). Cached values are shared
 * between requests: callers must not modify them.
 */
export function createReadCache(opts: { ttlMs: number; now?: () => number }) {
  const now = opts.now ?? Date.now;
  const keysOf = new Map<CachedTable, Set<string>>();
  const entries = createLru<string, Entry>(READ_CACHE_ENTRIES, (key, entry) => unindex(key, entry));
  // Bumped by every change heard, per table (`cleared` by every clear): a load under way meanwhile may have read
  // the table before the change committed, so its answer goes to its own request but is not kept.
  const generations = new Map<string, number>();
  let cleared = 0;
  // Every count only grows, so the sum is the same only when none of them moved.
  const stamp = (tables: readonly CachedTable[]) =>
    tables.reduce((sum, table) => sum + (generations.get(table) ?? 0), cleared);

  function unindex(key: string, entry: Entry) {
    for (const table of entry.tables) keysOf.get(table)?.delete(key);
  }

  function drop(table: string) {
    generations.set(table, (generations.get(table) ?? 0) + 1);
    const keys = keysOf.get(table as CachedTable);
    if (!keys) return;
    keysOf.delete(table as CachedTable);
    for (const key of keys) {
      const entry = entries.get(key);
      if (!entry) continue;
      entries.delete(key);
      unindex(key, entry);
    }
  }

  return {
    /**
     * The answer kept under `key`, else what `load` reads from `tables`: kept unless one changed meanwhile, and unless
     * undefined (a lookup of a made-up id would push real pages out).
     */
    async get<T>(key: string, tables: readonly CachedTable[], load: () => Promise<T>): Promise<T> {
      if (opts.ttlMs <= 0) return load();
      const hit = entries.get(key);
      if (hit && hit.expiresAtMs > now()) return hit.value as T;
      if (hit) {
        entries.delete(key);
        unindex(key, hit);
      }
      const seen = stamp(tables);
      const value = await load();
      if (value !== undefined && seen === stamp(tables)) {
        entries.set(key, { value: deepFreeze(value), tables, expiresAtMs: now() + opts.ttlMs });
        for (const table of tables) {
          let keys = keysOf.get(table);
          if (!keys) keysOf.set(table, (keys = new Set()));
          keys.add(key);
        }
      }
      return value;
    },

    /** A table's change notice; undefined when some may have been missed (a LISTEN reconnected, PGlite reopened). */
    onNotify(table: string | undefined) {
      if (table !== undefined) return drop(table);
      cleared++;
      entries.clear();
      keysOf.clear();
    },

    get size() {
      return entries.size;
    },
  };
}
export type ReadCache = ReturnType<typeof createReadCache>;

/** A shared answer that a caller modified would be wrong for every later request: modifying it throws instead. */
function deepFreeze<T>(value: T): T {
  if (value === null || typeof value !== 'object' || Object.isFrozen(value)) return value;
  Object.freeze(value);
  for (const field of Object.values(value)) deepFreeze(field);
  return value;
}

/** A cache key for a query object: the same filters in any order of their fields give the same key. */
export function cacheKey(name: string, query: object): string {
  const fields = Object.entries(query)
    .filter(([, v]) => v !== undefined)
    .sort(([a], [b]) => (a < b ? -1 : 1));
  return `${name}:${JSON.stringify(fields)}`;
}
