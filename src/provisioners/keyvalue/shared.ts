import type { Redis } from 'ioredis';
import type { KeyValueProvisioner, KeyValueSpec, Placement } from '../types.js';
import { assertKeyValueSpec, tenantRules } from './acl.js';
import { answersPing, serverVersion, withConnection, type Login, type TcpAddress } from './connection.js';

/**
 * Datastores as ACL users on an existing Redis (7+) or Valkey server: each datastore's user sees only keys and
 * channels under its prefix `<id>:` and cannot administer the server (see tenantRules). Memory and eviction
 * belong to that server, not to a datastore: `update` has nothing to apply and the plan's memory is not enforced.
 */

/** SCAN, the admin's other calls, and ACL SAVE on a busy server take longer than a login check. */
const ADMIN_TIMEOUT_MS = 10_000;
const SCAN_BATCH = 1000;

function parseAdminUrl(adminUrl: string): { address: TcpAddress; login: Login | undefined } {
  const url = new URL(adminUrl);
  if (url.protocol !== 'redis:' && url.protocol !== 'rediss:')
    throw new Error(`the Redis admin URL must be redis:// or rediss://, not ${url.protocol}`);
  const password = decodeURIComponent(url.password);
  return {
    address: {
      host: url.hostname.replace(/^\[|\]$/g, ''),
      port: Number(url.port || 6379),
      tls: url.protocol === 'rediss:',
    },
    login: password ? { user: decodeURIComponent(url.username) || 'default', password } : undefined,
  };
}

export const keyPrefixOf = (spec: KeyValueSpec): string => `${spec.id}:`;

/** Without an `aclfile` the server cannot save users (they last until it restarts, and start re-creates them). */
async function saveAcl(redis: Redis): Promise<void> {
  try {
    await redis.call('ACL', 'SAVE');
  } catch (err) {
    if (!/not configured to use an ACL file/i.test((err as Error).message)) throw err;
  }
}

/** UNLINKs the prefix's keys in every database (the user may SELECT any). */
async function unlinkPrefix(redis: Redis, keyPrefix: string): Promise<void> {
  for (let db = 0; ; db++) {
    try {
      await redis.select(db);
    } catch (err) {
      if (/out of range/i.test((err as Error).message)) return;
      throw err;
    }
    let cursor = '0';
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', `${keyPrefix}*`, 'COUNT', SCAN_BATCH);
      if (keys.length > 0) await redis.unlink(...keys);
      cursor = next;
    } while (cursor !== '0');
  }
}

export function createSharedKeyValue(opts: { adminUrl: string }): KeyValueProvisioner {
  const admin = parseAdminUrl(opts.adminUrl);
  const asAdmin = <T>(fn: (redis: Redis) => Promise<T>) =>
    withConnection(admin.address, admin.login, fn, ADMIN_TIMEOUT_MS);
  // Asked in the background (a shared server that is down while Slipway boots must not keep Slipway down),
  // and again on every create/start/stop: versions() is [] until the server has answered once.
  let version: string | undefined;
  asAdmin(serverVersion).then(
    (answer) => (version = answer ?? version),
    () => undefined,
  );

  const placementOf = (spec: KeyValueSpec): Placement => ({
    host: admin.address.host,
    port: admin.address.port,
    state: { keyPrefix: keyPrefixOf(spec), tls: admin.address.tls },
  });

  function assertTenant(spec: KeyValueSpec): void {
    assertKeyValueSpec(spec);
    if (spec.user === 'default' || spec.user === admin.login?.user)
      throw new Error(`the user ${spec.user} is the shared server's own, not a datastore's`);
  }

  /** The whole user, every time (idempotent, and re-creates it when the server lost it in a restart). */
  async function setUser(spec: KeyValueSpec, enabled: boolean): Promise<Placement> {
    assertTenant(spec);
    await asAdmin(async (redis) => {
      await redis.call('ACL', 'SETUSER', spec.user, ...tenantRules(spec, keyPrefixOf(spec), enabled));
      if (!enabled) await redis.call('CLIENT', 'KILL', 'USER', spec.user);
      await saveAcl(redis);
      version = (await serverVersion(redis)) ?? version;
    });
    return placementOf(spec);
  }

  return {
    kind: 'shared',
    versions: () => (version ? [version] : []),
    create: (spec) => setUser(spec, true),
    start: (spec) => setUser(spec, true),
    stop: async (spec) => void (await setUser(spec, false)),
    check: (spec) => answersPing(admin.address, { user: spec.user, password: spec.password }),
    /** maxmemory and the eviction policy are the shared server's, for all its tenants. */
    update: async (_spec, placement) => placement,
    async destroy(spec) {
      assertTenant(spec);
      await asAdmin(async (redis) => {
        // The user first (ACL DELUSER also closes its connections), so nothing writes while its keys go.
        await redis.call('ACL', 'DELUSER', spec.user);
        await saveAcl(redis);
        await unlinkPrefix(redis, keyPrefixOf(spec));
      });
    },
  };
}
