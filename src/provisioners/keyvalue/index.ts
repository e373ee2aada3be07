import type { ServerNetwork } from '../server-network.js';
import type { KeyValueProvisioner } from '../types.js';
import { createLocalKeyValue, findKeyValueServer } from './local.js';
import { createSharedKeyValue } from './shared.js';

/** What the API answers (501 not_configured) when createKeyValueProvisioner found no way to run key-value datastores. */
export const KEY_VALUE_NOT_CONFIGURED =
  'Key-value datastores are not enabled on this Slipway: install valkey-server or redis-server on the PATH of the Slipway ' +
  'process (e.g. `apt-get install redis-server`) to run a server per datastore, or set SLIPWAY_REDIS_ADMIN_URL ' +
  '(redis://<admin user>:<password>@<host>:<port>) to give each datastore an ACL user on an existing Redis or Valkey server; then restart Slipway.';

/**
 * Shared (an ACL user per datastore on the server at adminUrl) when adminUrl (SLIPWAY_REDIS_ADMIN_URL) is set,
 * else local (a server process per datastore) when a server binary is on the PATH, else undefined.
 */
export function createKeyValueProvisioner(opts: {
  dataDir: string;
  adminUrl?: string | undefined;
  runAs?: { uid: number; gid: number } | undefined;
  /** Namespaces mode: a namespace of its own for each local server. */
  network?: ServerNetwork | undefined;
}): KeyValueProvisioner | undefined {
  if (opts.adminUrl) return createSharedKeyValue({ adminUrl: opts.adminUrl });
  const serverPath = findKeyValueServer();
  return serverPath
    ? createLocalKeyValue({ dataDir: opts.dataDir, runAs: opts.runAs, serverPath, network: opts.network })
    : undefined;
}
