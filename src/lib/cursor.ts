import { badRequest } from './errors.js';

// Cursors are opaque to clients: the base64url of the last row's sort key (its id,
// which is time-ordered; see ids.ts).
export const encodeCursor = (id: string) => Buffer.from(id).toString('base64url');

export function decodeCursor(cursor: string | undefined): string | undefined {
  if (cursor === undefined || cursor === '') return undefined;
  const id = Buffer.from(cursor, 'base64url').toString('utf8');
  if (!/^[a-z]{3}-[0-9a-v]{20}$/.test(id)) throw badRequest('invalid cursor');
  return id;
}

/** Render's list envelope: a bare array of `{cursor, <name>: item}`. */
export function envelope<T extends { id: string }, K extends string>(name: K, items: readonly T[]) {
  return items.map((item) => ({ cursor: encodeCursor(item.id), [name]: item }) as { cursor: string } & Record<K, T>);
}

const pages = new WeakMap<readonly object[], unknown>();
/** Envelopes built once and shared by requests: never modified, so their JSON can be made once (isSharedPage). */
const shared = new WeakSet<object>();
export const isSharedPage = (payload: unknown) =>
  typeof payload === 'object' && payload !== null && shared.has(payload);

/**
 * The envelope of `rows` mapped by `toBody`, which must depend on the row alone. Rows from the read cache are frozen
 * (src/core/read-cache.ts) and so never change: their envelope is built once, deep-frozen and marked shared, which
 * lets the route's serializer reuse its JSON (src/http/lazy-schemas.ts).
 */
export function envelopeOf<R extends object, T extends { id: string }, K extends string>(
  name: K,
  rows: readonly R[],
  toBody: (row: R) => T,
) {
  if (!Object.isFrozen(rows)) return envelope(name, rows.map(toBody));
  type Page = ReturnType<typeof envelope<T, K>>;
  let page = pages.get(rows) as Page | undefined;
  if (!page) {
    page = envelope(name, rows.map(toBody));
    for (const item of page) Object.freeze(Object.freeze(item)[name]);
    pages.set(rows, Object.freeze(page));
    shared.add(page);
  }
  return page;
}
