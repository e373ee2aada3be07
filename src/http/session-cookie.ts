import type { FastifyReply } from 'fastify';
import { SESSION_COOKIE } from './plugins/authenticate.js';

/** The device cookie (core/device-cookies.ts): sent only to the sign-in routes, never cross-site. */
export const DEVICE_COOKIE = 'slipway_device';
export const DEVICE_COOKIE_PATH = '/v1/auth';

/** The HTTP-only session cookie a password login and an OAuth sign-in both end with. */
export function setSessionCookie(reply: FastifyReply, session: { token: string; expiresAt: Date }, publicUrl: string) {
  reply.setCookie(SESSION_COOKIE, session.token, {
    httpOnly: true,
    sameSite: 'lax',
    secure: publicUrl.startsWith('https:'),
    path: '/',
    expires: session.expiresAt,
  });
}

/** The device cookie a password login or a registration ends with. */
export function setDeviceCookie(reply: FastifyReply, device: { value: string; expiresAt: Date }, publicUrl: string) {
  reply.setCookie(DEVICE_COOKIE, device.value, {
    httpOnly: true,
    sameSite: 'strict',
    secure: publicUrl.startsWith('https:'),
    path: DEVICE_COOKIE_PATH,
    expires: device.expiresAt,
  });
}
