import { randomBytes } from 'node:crypto';
import type { SecretBox } from '../lib/secret-box.js';
import { normalizeEmail } from './auth.js';

const DAY_MS = 86_400_000;
/** A device stays known this long after its last sign-in. */
const DEVICE_TTL_DAYS = 365;

/** What a device cookie holds, sealed: the login it was issued to, and its own id (the key it is limited by). */
interface Device {
  kind: 'device';
  email: string;
  nonce: string;
  expiresAt: number;
}

/**
 * OWASP's device cookies (docs/github-and-sign-in.md, "Sign-in limits"): a browser that signed in to an account gets a sealed cookie
 * naming that account. A login to that account carrying it is limited per device, not by the account's lockout, so
 * guesses from elsewhere cannot keep the owner out. Sealed (AES-GCM), so it cannot be forged or moved to another
 * account, and `kind` keeps other sealed values (an OAuth flow's cookie) from passing as one.
 */
export function createDeviceCookies(deps: { box: SecretBox; ttlDays?: number; now?: () => number }) {
  const now = deps.now ?? Date.now;
  const ttlMs = (deps.ttlDays ?? DEVICE_TTL_DAYS) * DAY_MS;
  return {
    /** A new device cookie for `email` (a new one at every sign-in, so a device's count starts again). */
    issue(email: string): { value: string; expiresAt: Date } {
      const expiresAt = now() + ttlMs;
      const device: Device = {
        kind: 'device',
        email: normalizeEmail(email),
        nonce: randomBytes(16).toString('base64url'),
        expiresAt,
      };
      return { value: deps.box.seal(JSON.stringify(device)), expiresAt: new Date(expiresAt) };
    },
    /** The device's id when `value` is a device cookie this Slipway issued to `email`, unexpired; else undefined. */
    trusted(value: string | undefined, email: string): string | undefined {
      if (!value) return undefined;
      try {
        const device = JSON.parse(deps.box.open(value)) as Partial<Device>;
        if (device.kind !== 'device' || typeof device.nonce !== 'string') return undefined;
        if (device.email !== normalizeEmail(email) || !(Number(device.expiresAt) > now())) return undefined;
        return device.nonce;
      } catch {
        return undefined; // not sealed by this Slipway (or with another key)
      }
    },
  };
}
export type DeviceCookies = ReturnType<typeof createDeviceCookies>;
