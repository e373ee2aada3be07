import { createLru } from '../lib/lru.js';
import type { Repos, Transact } from '../store/repos/index.js';

/** The LISTEN/NOTIFY channel on which every process hears which cached principals to drop. */
export const PRINCIPAL_CHANNEL = 'slipway_principals';
/** Bounds memory: a resolved principal is a few hundred bytes. */
export const PRINCIPAL_CACHE_ENTRIES = 10_000;

/**
 * A change to a row that cached answers depend on, named by the row: the payload of a
 * PRINCIPAL_CHANNEL notification. Ids have no ':' (src/lib/ids.ts), so these never collide.
 */
export const principalChange = {
  session: (sessionId: string) => `session:${sessionId}`,
  apiKey: (apiKeyId: string) => `apiKey:${apiKeyId}`,
  member: (workspaceId: string, userId: string) => `member:${workspaceId}:${userId}`,
};

/** What a loader found: the value to cache, the change that drops it, and when it stops being valid. */
export interface Loaded<T> {
  value: T;
  change: string;
  expiresAt?: Date | null;
}

interface Entry {
  value: unknown;
  change: string;
  expiresAtMs: number;
}

/**
 * Resolved sessions, API keys and workspace roles, kept `ttlMs` (0 turns caching off) so an
 * authenticated request costs no query. Every process drops an entry the moment its row changes:
 * `change()` makes the change and NOTIFYs it in one transaction, and drops it here; the other
 * processes hear it through `onNotify` (src/app/start.ts). An entry never outlives the expiry of the
 * session or key it holds.
 */
export function createPrincipalCache(opts: { ttlMs: number; transact: Transact; now?: () => number }) {
  const now = opts.now ?? Date.now;
  const keyOf = new Map<string, string>(); // change → cache key
  const entries = createLru<string, Entry>(PRINCIPAL_CACHE_ENTRIES, (key, entry) => forgetChange(key, entry));
  // Bumped by every drop: a load that was under way meanwhile may have read the row before the
  // change committed, so its answer is returned to its own request but not cached.
  let generation = 0;

  function forgetChange(key: string, entry: Entry) {
    if (keyOf.get(entry.change) === key) keyOf.delete(entry.change);
  }

  function remove(key: string, entry: Entry) {
    entries.delete(key);
    forgetChange(key, entry);
  }

  function drop(change: string) {
    generation++;
    const key = keyOf.get(change);
    if (key === undefined) return;
    const entry = entries.get(key);
    if (entry) remove(key, entry);
    keyOf.delete(change);
  }

  function clear() {
    generation++;
    entries.clear();
    keyOf.clear();
  }

  return {
    /** The cached value under `key`, else what `load` finds (an undefined answer is never cached). */
    async get<T>(key: string, load: () => Promise<Loaded<T> | undefined>): Promise<T | undefined> {
      if (opts.ttlMs <= 0) return (await load())?.value;
      const hit = entries.get(key);
      if (hit && hit.expiresAtMs > now()) return hit.value as T;
      if (hit) remove(key, hit);
      const seen = generation;
      const loaded = await load();
      if (!loaded) return undefined;
      const expiresAtMs = Math.min(now() + opts.ttlMs, loaded.expiresAt?.getTime() ?? Infinity);
      if (seen === generation && expiresAtMs > now()) {
        const previous = keyOf.get(loaded.change);
        if (previous !== undefined && previous !== key) entries.delete(previous);
        entries.set(key, { value: loaded.value, change: loaded.change, expiresAtMs });
        keyOf.set(loaded.change, key);
      }
      return loaded.value;
    },

    /**
     * Runs `work` in a transaction that also NOTIFYs `changes` (Postgres delivers them at commit,
     * so other processes hear of committed changes only), then drops them in this process.
     */
    async change<T>(changes: string[], work: (repos: Repos) => Promise<T>): Promise<T> {
      const result = await opts.transact(async (repos) => {
        const value = await work(repos);
        for (const change of changes) await repos.notices.send(PRINCIPAL_CHANNEL, change);
        return value;
      });
      for (const change of changes) drop(change);
      return result;
    },

    /** A PRINCIPAL_CHANNEL notification; undefined after (re)connecting, when some may have been missed. */
    onNotify(payload: string | undefined) {
      if (payload === undefined) clear();
      else drop(payload);
    },
  };
}
export type PrincipalCache = ReturnType<typeof createPrincipalCache>;
