import { Type } from '@sinclair/typebox';
import type { FastifyInstance, FastifyReply } from 'fastify';
import { requireUser } from '../../core/auth.js';
import { OAUTH_PROVIDERS } from '../../model/settings.js';
import type { HttpDeps } from '../deps.js';
import { principalOf } from '../guard.js';
import { SESSION_COOKIE } from '../plugins/authenticate.js';
import { accountLimiter, loginLimiter } from '../plugins/rate-limit.js';
import { defineRoute } from '../route.js';
import { DEVICE_COOKIE, setDeviceCookie, setSessionCookie } from '../session-cookie.js';
import { Email, Name, NoContent } from '../schemas/common.js';
import { OwnerBody, UserBody, ownerBody, userBody } from '../schemas/bodies.js';

const Password = Type.String({ minLength: 8, maxLength: 256 });
const InviteToken = Type.Optional(
  Type.String({ minLength: 1, maxLength: 200, description: 'Join a workspace with this invite' }),
);
const PROVIDER_NAMES = { github: 'GitHub', google: 'Google', apple: 'Apple' } as const;

export function authRoutes(deps: HttpDeps, app: FastifyInstance) {
  const { auth, devices, team, workspaces, config } = deps;
  const perIp = {
    max: config.authRateLimitPerMinute,
    timeWindow: '1 minute',
    keyGenerator: (req: { ip: string }) => `auth-ip:${req.ip}`,
  };
  const perAccount = accountLimiter(app, config.authAccountAttemptsPer10Minutes, '10 minutes');
  const loginLimits = loginLimiter(
    app,
    { perIpPerMinute: config.authRateLimitPerMinute, perDevicePer10Minutes: config.authAccountAttemptsPer10Minutes },
    perAccount,
    (req) => devices.trusted(req.cookies[DEVICE_COOKIE], (req.body as { email: string }).email),
  );

  /** A signed-in browser gets its session, and a new device cookie for the account. */
  const signedIn = (reply: FastifyReply, session: { token: string; expiresAt: Date }, email: string) => {
    setSessionCookie(reply, session, config.publicUrl);
    setDeviceCookie(reply, devices.issue(email), config.publicUrl);
  };

  return [
    defineRoute({
      method: 'POST',
      url: '/v1/auth/register',
      summary: 'Create an account and its default workspace',
      tags: ['Auth'],
      access: 'public',
      audit: 'CreateWorkspaceEvent',
      rateLimit: perIp,
      schema: {
        body: Type.Object({ email: Email, password: Password, name: Name, inviteToken: InviteToken }),
        response: { 201: Type.Object({ user: UserBody, workspace: OwnerBody }) },
      },
      handler: async (req, reply) => {
        await perAccount(req);
        req.auditInfo.actorEmail = req.body.email.trim().toLowerCase();
        const invite = req.body.inviteToken ? await team.checkInvite(req.body.inviteToken, req.body.email) : undefined;
        const { user, workspaceId, session } = await auth.register({ ...req.body, invite });
        req.principal = { kind: 'user', user, sessionId: '' };
        req.auditInfo.workspaceId = workspaceId;
        req.auditInfo.target = workspaceId;
        signedIn(reply, session, user.email);
        return reply.code(201).send({ user: userBody(user), workspace: ownerBody(await workspaces.get(workspaceId)) });
      },
    }),
    defineRoute({
      method: 'POST',
      url: '/v1/auth/login',
      summary: 'Sign in with email and password',
      tags: ['Auth'],
      access: 'public',
      audit: 'LoginEvent',
      // Limited in the handler, once the body says which account (loginLimiter).
      schema: {
        body: Type.Object({
          email: Email,
          password: Type.String({ minLength: 1, maxLength: 256 }),
          inviteToken: InviteToken,
        }),
        response: { 200: Type.Object({ user: UserBody }) },
      },
      handler: async (req, reply) => {
        await loginLimits(req, reply);
        req.auditInfo.actorEmail = req.body.email.trim().toLowerCase();
        const invite = req.body.inviteToken ? await team.checkInvite(req.body.inviteToken, req.body.email) : undefined;
        const { user, session } = await auth.login(req.body).catch(async (err: unknown) => {
          // A failed attempt shows in the account's own workspace log.
          const own = await workspaces.defaultOfEmail(req.auditInfo.actorEmail!);
          if (own) req.auditInfo.workspaceId = own;
          throw err;
        });
        req.principal = { kind: 'user', user, sessionId: '' };
        req.auditInfo.workspaceId = user.defaultWorkspaceId;
        if (invite) await team.accept(invite, user);
        signedIn(reply, session, user.email);
        return { user: userBody(user) };
      },
    }),
    defineRoute({
      method: 'POST',
      url: '/v1/auth/logout',
      summary: 'Sign out (revokes this session)',
      tags: ['Auth'],
      access: 'signed-in',
      audit: 'LogoutEvent',
      schema: { response: { 204: NoContent } },
      handler: async (req, reply) => {
        const principal = principalOf(req);
        if (principal.kind === 'user') {
          req.auditInfo.workspaceId = requireUser(principal).defaultWorkspaceId;
          await auth.logout(principal.sessionId);
        }
        reply.clearCookie(SESSION_COOKIE, { path: '/' });
        return reply.code(204).send(null);
      },
    }),
    defineRoute({
      method: 'GET',
      url: '/v1/auth/providers',
      summary: 'OAuth providers enabled on this server',
      tags: ['Auth'],
      access: 'public',
      schema: { response: { 200: Type.Array(Type.Object({ id: Type.String(), name: Type.String() })) } },
      handler: async () =>
        OAUTH_PROVIDERS.filter((id) => config.oauth[id]).map((id) => ({ id, name: PROVIDER_NAMES[id] })),
    }),
  ];
}
