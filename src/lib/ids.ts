import { randomBytes } from 'node:crypto';

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
  event: 'evt',
  audit: 'aud',
  apiKey: 'key',
  invite: 'inv',
  session: 'ses',
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

const ID_PATTERN = /^[a-z]{3}-[0-9a-v]{20}$/;
export function isId(kind: IdKind, value: string): boolean {
  return ID_PATTERN.test(value) && value.startsWith(`${ID_PREFIXES[kind]}-`);
}
