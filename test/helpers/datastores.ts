import type { Caller, Client } from './client.js';
import { waitFor } from './process.js';
import { findKeyValueServer } from '../../src/provisioners/keyvalue/local.js';
import { findPostgresInstalls } from '../../src/provisioners/postgres/binaries.js';

export const hasPostgresServer = () => findPostgresInstalls().size > 0;
export const hasRedisServer = () => findKeyValueServer() !== undefined;

/**
 * Whether tests needing `what` can run. Missing, they are skipped with a message, except under
 * SLIPWAY_REQUIRE_SERVICES=1 (CI), where a missing server is a failure.
 */
export function requireOrSkip(what: string, present: boolean): boolean {
  if (present) return true;
  if (process.env.SLIPWAY_REQUIRE_SERVICES === '1')
    throw new Error(`SLIPWAY_REQUIRE_SERVICES=1 but ${what} is not installed`);
  console.warn(`skipping: ${what} is not installed on this machine`);
  return false;
}

/** Polls a datastore until it has `status`; returns its body. */
export async function untilStatus(api: Client, as: Caller, url: string, status: string, timeoutMs = 20_000) {
  return waitFor(
    `${url} to be ${status}`,
    async () => {
      const res = await api.get(url, as);
      return res.body?.status === status ? res.body : undefined;
    },
    timeoutMs,
    100,
  );
}
