import { createCipheriv, createDecipheriv, createHmac, hkdfSync, randomBytes } from 'node:crypto';
import { chmodSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';

/** AES-256-GCM for values that must be encrypted at rest (env vars, stored replies). */
export interface SecretBox {
  seal(plaintext: string): string;
  open(sealed: string): string;
  /**
   * A stable, unguessable tag of `data` for one `purpose` (HMAC-SHA256 under a key derived for that purpose, base64url,
   * 128 bits): the same on every process that shares the secret key, and useless for any other purpose.
   */
  tag(purpose: string, data: string): string;
}

const VERSION = 'v1';

export function createSecretBox(key: Buffer): SecretBox {
  if (key.length !== 32) throw new Error('the secret key must be 32 bytes');
  const tagKeys = new Map<string, Buffer>();
  return {
    tag(purpose, data) {
      let tagKey = tagKeys.get(purpose);
      if (!tagKey) tagKeys.set(purpose, (tagKey = Buffer.from(hkdfSync('sha256', key, '', `slipway:${purpose}`, 32))));
      return createHmac('sha256', tagKey).update(data).digest().subarray(0, 16).toString('base64url');
    },
    seal(plaintext) {
      const iv = randomBytes(12);
      const cipher = createCipheriv('aes-256-gcm', key, iv);
      const body = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
      return `${VERSION}:${Buffer.concat([iv, cipher.getAuthTag(), body]).toString('base64')}`;
    },
    open(sealed) {
      const [version, data] = sealed.split(':');
      if (version !== VERSION || !data) throw new Error('not a sealed value');
      const raw = Buffer.from(data, 'base64');
      const decipher = createDecipheriv('aes-256-gcm', key, raw.subarray(0, 12));
      decipher.setAuthTag(raw.subarray(12, 28));
      return Buffer.concat([decipher.update(raw.subarray(28)), decipher.final()]).toString('utf8');
    },
  };
}

/** `SLIPWAY_SECRET_KEY` (64 hex chars or base64 of 32 bytes), else a key generated once into the data dir. */
export function loadSecretKey(configured: string | undefined, dataDir: string): Buffer {
  if (configured) {
    const key = /^[0-9a-f]{64}$/i.test(configured) ? Buffer.from(configured, 'hex') : Buffer.from(configured, 'base64');
    if (key.length !== 32) throw new Error('SLIPWAY_SECRET_KEY must be 32 bytes, as 64 hex chars or base64');
    return key;
  }
  const file = path.join(dataDir, 'secret.key');
  if (!existsSync(file)) writeFileSync(file, randomBytes(32).toString('hex'), { mode: 0o600, flag: 'wx' });
  chmodSync(file, 0o600);
  return Buffer.from(readFileSync(file, 'utf8').trim(), 'hex');
}
