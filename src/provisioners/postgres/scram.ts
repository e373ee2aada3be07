import { createHash, createHmac, pbkdf2Sync, timingSafeEqual } from 'node:crypto';

/** pg_authid.rolpassword under password_encryption = scram-sha-256: `SCRAM-SHA-256$<iterations>:<salt>$<StoredKey>:<ServerKey>`. */
const VERIFIER = /^SCRAM-SHA-256\$(\d+):([A-Za-z0-9+/=]+)\$([A-Za-z0-9+/=]+):([A-Za-z0-9+/=]+)$/;

/**
 * The iteration count of every verifier Postgres makes from a password here (its scram_iterations default; Slipway never
 * changes it). Any other count came from a pre-hashed `ALTER ROLE … PASSWORD 'SCRAM-SHA-256$<n>:…'`, which the
 * datastore's own user may run: hashing with an n it chose would let it stall Slipway at every check.
 */
export const SCRAM_ITERATIONS = 4096;

/**
 * Whether `password` is the one the SCRAM verifier was made from (RFC 5802's StoredKey = H(HMAC(SaltedPassword,
 * "Client Key"))), worked out here so that checking a login needs no password sent anywhere. Postgres SASLpreps the
 * password first; that is the identity on printable ASCII, which every password Slipway makes is.
 */
export function scramVerifies(stored: string | null | undefined, password: string): boolean {
  const parts = VERIFIER.exec(stored ?? '');
  if (!parts || Number(parts[1]) !== SCRAM_ITERATIONS) return false;
  const salted = pbkdf2Sync(
    Buffer.from(password, 'utf8'),
    Buffer.from(parts[2]!, 'base64'),
    Number(parts[1]),
    32,
    'sha256',
  );
  const storedKey = createHash('sha256').update(createHmac('sha256', salted).update('Client Key').digest()).digest();
  const expected = Buffer.from(parts[3]!, 'base64');
  return expected.length === storedKey.length && timingSafeEqual(expected, storedKey);
}
