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
export function envelope<T extends { id: string }, K extends string>(name: K, items: T[]) {
  return items.map((item) => ({ cursor: encodeCursor(item.id), [name]: item }) as { cursor: string } & Record<K, T>);
}
