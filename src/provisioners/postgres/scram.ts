import { createHash, createHmac, pbkdf2Sync, timingSafeEqual } from 'node:crypto';

/** pg_authid.rolpassword under password_encryption = scram-sha-256: `SCRAM-SHA-256$<iterations>:<salt>$<StoredKey>:<ServerKey>`. */
const VERIFIER = /^SCRAM-SHA-256\$(\d+):([A-Za-z0-9+/=]+)\$([A-Za-z0-9+/=]+):([A-Za-z0-9+/=]+)$/;

export const isScramVerifier = (stored: string | null | undefined): boolean => VERIFIER.test(stored ?? '');

/**
 * Whether `password` is the one the SCRAM verifier was made from (RFC 5802's StoredKey = H(HMAC(SaltedPassword,
 * "Client Key"))), worked out here so that checking a login needs no password sent anywhere. Postgres SASLpreps the
 * password first; that is the identity on printable ASCII, which every password Slipway makes is.
 */
export function scramVerifies(stored: string | null | undefined, password: string): boolean {
  const parts = VERIFIER.exec(stored ?? '');
  if (!parts) return false;
  const salted = pbkdf2Sync(Buffer.from(password, 'utf8'), Buffer.from(parts[2]!, 'base64'), Number(parts[1]), 32, 'sha256');
  const storedKey = createHash('sha256').update(createHmac('sha256', salted).update('Client Key').digest()).digest();
  const expected = Buffer.from(parts[3]!, 'base64');
  return expected.length === storedKey.length && timingSafeEqual(expected, storedKey);
}
