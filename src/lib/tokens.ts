import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';

/** A random bearer secret (session cookie, API key, invite): 32 bytes, base64url. */
export function randomToken(prefix = ''): string {
  return prefix + randomBytes(32).toString('base64url');
}

/** Tokens are stored as SHA-256 digests: high-entropy secrets need no slow KDF. */
export function hashToken(token: string): string {
  return createHash('sha256').update(token).digest('hex');
}

export function constantTimeEqual(a: string, b: string): boolean {
  const left = Buffer.from(a);
  const right = Buffer.from(b);
  return left.length === right.length && timingSafeEqual(left, right);
}
