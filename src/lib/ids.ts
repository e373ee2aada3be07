import { createHash, randomBytes } from 'node:crypto';

const ALPHABET = '0123456789abcdefghijklmnopqrstuv'; // base32hex, as in Render's ids

export const ID_PREFIXES = {
  user: 'usr',
  workspace: 'tea',
  service: 'srv',
  deploy: 'dep',
  source: 'src',
  customDomain: 'cdm',
  postgres: 'dpg',
  keyValue: 'red',
  project: 'prj',
  environment: 'evm',
  envGroup: 'evg',
  blueprint: 'exs',
  blueprintSync: 'exe',
  webhook: 'whk',
  webhookEvent: 'whe',
  event: 'evt',
  audit: 'aud',
  apiKey: 'key',
  invite: 'inv',
  session: 'ses',
  identity: 'idn',
  headerRule: 'hdr',
  routeRule: 'rdr',
  registryCredential: 'rgc',
  postgresExport: 'exp',
  job: 'job',
  logStream: 'lgs',
  disk: 'dsk',
  diskSnapshot: 'snp',
} as const;
export type IdKind = keyof typeof ID_PREFIXES;

/**
 * `<prefix>-<20 chars>`: 10 chars of milliseconds then 10 random chars, so ids sort by
 * creation time and serve as the keyset for cursor pagination.
 */
export function newId(kind: IdKind, now = Date.now()): string {
  let time = '';
  let t = now;
  for (let i = 0; i < 10; i++) {
    time = ALPHABET[t % 32] + time;
    t = Math.floor(t / 32);
  }
  const bytes = randomBytes(10);
  let rand = '';
  for (const b of bytes) rand += ALPHABET[b % 32];
  return `${ID_PREFIXES[kind]}-${time}${rand}`;
}

/** The smallest id of `kind` made at `ms` (time chars, then the lowest random ones): a bound for a time window. */
export function firstIdAt(kind: IdKind, ms: number): string {
  return newId(kind, Math.max(0, Math.floor(ms))).slice(0, 14) + '0'.repeat(10);
}

const ID_PATTERN = /^[a-z]{3}-[0-9a-v]{20}$/;
export function isId(kind: IdKind, value: string): boolean {
  return ID_PATTERN.test(value) && value.startsWith(`${ID_PREFIXES[kind]}-`);
}

/**
 * An id derived from what a thing is (a static site's header or route rule, stored without ids): the same rule always
 * has the same id, whoever wrote it (the API or a blueprint sync). Same shape as `newId`, so cursors take it.
 */
export function contentId(kind: IdKind, parts: string[]): string {
  const digest = createHash('sha256').update(JSON.stringify(parts)).digest();
  let chars = '';
  for (let i = 0; i < 20; i++) chars += ALPHABET[digest[i]! % 32];
  return `${ID_PREFIXES[kind]}-${chars}`;
}
