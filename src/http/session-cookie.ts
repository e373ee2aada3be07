import type { FastifyReply } from 'fastify';
import { SESSION_COOKIE } from './plugins/authenticate.js';

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
