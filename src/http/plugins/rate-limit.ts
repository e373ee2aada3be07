import rateLimit from '@fastify/rate-limit';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { AppError } from '../../lib/errors.js';
import { SESSION_COOKIE } from './authenticate.js';

function rateLimited(retryAfterSeconds: number) {
  const err = new AppError('rate_limited', `too many requests; retry in ${retryAfterSeconds} s`);
  err.retryAfterSeconds = retryAfterSeconds;
  return err;
}

/** Per credential when there is one (several users may share an IP), else per IP. */
function credentialKey(request: FastifyRequest): string {
  const auth = request.headers.authorization;
  if (auth) return `auth:${auth.slice(-24)}`;
  const cookie = request.cookies?.[SESSION_COOKIE];
  return cookie ? `cookie:${cookie.slice(-24)}` : `ip:${request.ip}`;
}

/** Global limit plus IETF draft `RateLimit-*` headers; routes may declare stricter ones. */
export async function registerRateLimit(app: FastifyInstance, perMinute: number) {
  await app.register(rateLimit, {
    global: true,
    max: perMinute,
    timeWindow: '1 minute',
    keyGenerator: credentialKey,
    enableDraftSpec: true,
    errorResponseBuilder: (_req, ctx) => rateLimited(Math.max(1, Math.ceil(ctx.ttl / 1000))),
  });
}

/** A limiter keyed by something inside the request (an account's email), checked by the handler. */
export function accountLimiter(app: FastifyInstance, max: number, timeWindow: string) {
  const check = app.createRateLimit({
    max,
    timeWindow,
    keyGenerator: (req) => `account:${(req.body as { email?: string })?.email?.trim().toLowerCase() ?? ''}`,
  });
  return async (request: FastifyRequest) => {
    const result = await check(request);
    if (!result.isAllowed && result.isExceeded) throw rateLimited(result.ttlInSeconds);
  };
}

/**
 * Password logins (docs/github-and-sign-in.md, "Sign-in limits"): a device that signed in to the account before (its device cookie,
 * `deviceOf`) is limited by its own count only, so guesses from anywhere else lock it out of nothing; any other client
 * is limited per IP and per account (`perAccount`, shared with registration). The deciding count's `RateLimit-*`
 * headers go on the reply.
 */
export function loginLimiter(
  app: FastifyInstance,
  limits: { perIpPerMinute: number; perDevicePer10Minutes: number },
  perAccount: (request: FastifyRequest) => Promise<void>,
  deviceOf: (request: FastifyRequest) => string | undefined,
) {
  const perIp = app.createRateLimit({
    max: limits.perIpPerMinute,
    timeWindow: '1 minute',
    keyGenerator: (req) => `auth-ip:${req.ip}`,
  });
  const perDevice = app.createRateLimit({
    max: limits.perDevicePer10Minutes,
    timeWindow: '10 minutes',
    keyGenerator: (req) => `device:${deviceOf(req) ?? ''}`,
  });
  return async (request: FastifyRequest, reply: FastifyReply) => {
    const trusted = deviceOf(request) !== undefined;
    const result = await (trusted ? perDevice : perIp)(request);
    if (!result.isAllowed) {
      if (result.isExceeded) throw rateLimited(result.ttlInSeconds);
      reply.header('RateLimit-Limit', result.max);
      reply.header('RateLimit-Remaining', result.remaining);
      reply.header('RateLimit-Reset', result.ttlInSeconds);
    }
    if (!trusted) await perAccount(request);
  };
}
