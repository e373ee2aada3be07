import { createHmac, randomBytes } from 'node:crypto';

/** Standard Webhooks secrets: `whsec_` and the base64 of 24 random bytes (the key is the decoded bytes). */
export const newSecret = () => `whsec_${randomBytes(24).toString('base64')}`;

/**
 * The Standard Webhooks headers for one attempt: `v1,<base64 HMAC-SHA256 of "id.timestamp.body">` for each secret,
 * space-separated (the new secret and, for a day after a rotation, the old one), so receivers holding either verify.
 */
export function signatureHeaders(secrets: string[], id: string, body: string, now = new Date()) {
  const timestamp = Math.floor(now.getTime() / 1000).toString();
  const signed = `${id}.${timestamp}.${body}`;
  const signatures = secrets.map(
    (s) =>
      `v1,${createHmac('sha256', Buffer.from(s.replace(/^whsec_/, ''), 'base64'))
        .update(signed)
        .digest('base64')}`,
  );
  return { 'webhook-id': id, 'webhook-timestamp': timestamp, 'webhook-signature': signatures.join(' ') };
}
