import { createHash } from 'node:crypto';
import type { KeyValueSpec } from '../types.js';

/** Redis' eviction policies (the API maps Render's `allkeys_lru` spelling to these). */
export const MAXMEMORY_POLICIES = [
  'noeviction',
  'allkeys-lru',
  'allkeys-lfu',
  'allkeys-random',
  'volatile-lru',
  'volatile-lfu',
  'volatile-random',
  'volatile-ttl',
] as const;

/** The user Slipway itself logs in as on a server of its own (live config changes); never a datastore's user. */
export const ADMIN_USER = 'slipway-admin';

/**
 * Ids, user names and the numbers end up in config files, ACL rules and key patterns: anything but plain
 * names would be an injection (a newline in a config line, a glob character in `~prefix*`), so refuse it here.
 */
export function assertKeyValueSpec(spec: KeyValueSpec): void {
  const plainName = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/;
  if (!plainName.test(spec.id)) throw new Error(`invalid key-value id ${JSON.stringify(spec.id)}`);
  if (!plainName.test(spec.user) || spec.user === ADMIN_USER)
    throw new Error(`invalid key-value user name ${JSON.stringify(spec.user)}`);
  if (spec.password.length === 0) throw new Error('the key-value password is empty');
  if (!(MAXMEMORY_POLICIES as readonly string[]).includes(spec.maxmemoryPolicy)) {
    throw new Error(
      `invalid maxmemory policy ${JSON.stringify(spec.maxmemoryPolicy)} (one of ${MAXMEMORY_POLICIES.join(', ')})`,
    );
  }
  for (const [name, value] of Object.entries(spec.size)) {
    if (!Number.isSafeInteger(value) || value < 1)
      throw new Error(`invalid key-value size: ${name} must be a positive integer`);
  }
}

/** The form ACL rules accept instead of a clear-text password (`#<sha256 hex>`), so config files hold no password. */
export const passwordHashRule = (password: string): string => `#${createHash('sha256').update(password).digest('hex')}`;

/**
 * The customer on a server of its own: every key and command, except administration (CONFIG, ACL changes,
 * SHUTDOWN, DEBUG, MONITOR, MODULE, replication, SAVE, CLIENT KILL, ...), which is the platform's job, and
 * MIGRATE, which would let the server connect anywhere. FLUSHALL, KEYS and INFO stay: the data is all theirs.
 */
export const ownServerRules = (password: string): string[] => [
  'reset',
  'on',
  passwordHashRule(password),
  '~*',
  '&*',
  '+@all',
  '-@admin',
  '-migrate',
];

/**
 * A tenant on a shared server: only keys and channels under its prefix; no administration and none of the
 * commands that act on, or reveal the names of, everyone's keys (FLUSHALL, FLUSHDB, KEYS, SCAN, RANDOMKEY,
 * SORT ... BY, SWAPDB, MIGRATE, DBSIZE, PUBSUB CHANNELS), nor the server-wide script and function stores
 * (SCRIPT KILL/FLUSH, FUNCTION). INFO is allowed back: client libraries (BullMQ, ioredis' ready check) read
 * the server version and eviction policy from it, and it holds server statistics, not tenant data.
 */
export function tenantRules(spec: KeyValueSpec, keyPrefix: string, enabled: boolean): string[] {
  return [
    'reset',
    enabled ? 'on' : 'off',
    `>${spec.password}`,
    `~${keyPrefix}*`,
    `&${keyPrefix}*`,
    '+@all',
    '-@admin',
    '-@dangerous',
    '+info',
    '-scan',
    '-randomkey',
    '-dbsize',
    '-pubsub',
    '-script|kill',
    '-script|flush',
    '-function',
  ];
}
