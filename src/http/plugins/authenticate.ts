import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Auth } from '../../core/auth.js';
import type { Principal } from '../../core/principal.js';
import { AppError, unauthorized } from '../../lib/errors.js';

export const SESSION_COOKIE = 'slipway_session';
const UNSAFE = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

declare module 'fastify' {
  interface FastifyRequest {
    principal?: Principal;
    /** What the audit entry of this request says beyond the principal (set by guards and handlers). */
    auditInfo: { workspaceId?: string | null; target?: string; actorEmail?: string; system?: string };
  }
}

function originOf(value: string | undefined): string | undefined {
  if (!value) return undefined;
  try {
    return new URL(value).origin;
  } catch {
    return 'invalid';
  }
}

/**
 * Which cookie-authenticated requests must pass checkCsrf: the unsafe methods, and WebSocket
 * upgrades. A page of another site may open a WebSocket to us, and the browser sends our cookie
 * with it (the same-origin policy does not cover WebSockets): the log stream would be its to read.
 */
const needsCsrfCheck = (request: FastifyRequest) => UNSAFE.has(request.method) || request.ws === true;

/**
 * A cookie rides along on cross-site requests; a custom header or a matching
 * Origin/Referer cannot be forged by another site, so one of them is required.
 * (Browsers always send Origin on a WebSocket handshake, and a page cannot add headers to it.)
 */
function checkCsrf(request: FastifyRequest, publicUrl: string) {
  const allowed = new Set([new URL(publicUrl).origin, `${request.protocol}://${request.host}`]);
  const origin = originOf(request.headers.origin) ?? originOf(request.headers.referer);
  if (origin ? allowed.has(origin) : request.headers['x-requested-with'] !== undefined) return;
  throw new AppError(
    'forbidden',
    'cross-site request refused: send an Origin matching this server or an X-Requested-With header',
  );
}

/** Resolves the principal from a Bearer token or the session cookie; refuses what the route's access does not allow. */
export function registerAuthentication(app: FastifyInstance, deps: { auth: Auth; publicUrl: string }) {
  app.decorateRequest('principal', undefined);
  app.decorateRequest('auditInfo', null as never);
  app.addHook('onRequest', async (request) => {
    request.auditInfo = {};
    const access = request.routeOptions.config?.access;
    if (!access || access === 'public') return;
    const header = request.headers.authorization;
    if (header !== undefined) {
      const match = /^Bearer ([\x21-\x7e]{1,512})$/.exec(header);
      request.principal = match ? await deps.auth.fromBearerToken(match[1]!) : undefined;
      if (!request.principal) throw unauthorized('invalid, expired or revoked bearer token');
      if (access === 'operator' && request.principal.kind !== 'operator')
        throw new AppError('forbidden', 'this needs the operator token');
      return;
    }
    const cookie = request.cookies[SESSION_COOKIE];
    if (cookie) request.principal = await deps.auth.fromSessionToken(cookie);
    if (!request.principal)
      throw unauthorized(cookie ? 'session expired or signed out' : 'sign in or send Authorization: Bearer <API key>');
    if (access === 'operator') throw new AppError('forbidden', 'this needs the operator token');
    if (needsCsrfCheck(request)) checkCsrf(request, deps.publicUrl);
  });
}
