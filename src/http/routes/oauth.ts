import { Type } from '@sinclair/typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { requireUser } from '../../core/auth.js';
import { OAUTH_PROVIDERS } from '../../model/settings.js';
import type { HttpDeps } from '../deps.js';
import { principalOf } from '../guard.js';
import { defineRoute } from '../route.js';
import { IdParam, literalUnion, NoContent } from '../schemas/common.js';
import { setSessionCookie } from '../session-cookie.js';

/** The sealed flow (state, nonce, PKCE verifier) between a start and its callback. */
const FLOW_COOKIE = 'slipway_oauth';
const FLOW_PATH = '/v1/auth/oauth';
const ProviderParams = Type.Object({ provider: literalUnion(OAUTH_PROVIDERS) });
/** A provider's callback parameters (in the query, or a form_post body); others a provider adds are passed on. */
const Param = Type.Optional(Type.String({ maxLength: 8192 }));
const CallbackParams = Type.Object(
  { code: Param, state: Param, iss: Param, error: Param, error_description: Param, error_uri: Param, user: Param },
  { additionalProperties: Type.String({ maxLength: 8192 }), maxProperties: 20 },
);
const IdentityBody = Type.Object(
  {
    id: Type.String(),
    provider: Type.String(),
    email: Type.Union([Type.String(), Type.Null()]),
    createdAt: Type.String({ format: 'date-time' }),
  },
  { title: 'identity' },
);

/** Sign in with GitHub, Google or Apple; link and unlink identities (docs/github-and-sign-in.md, "Sign in with GitHub, Google or Apple"). */
export function oauthRoutes({ oauth, config }: HttpDeps) {
  // Apple posts its answer from its own site (form_post): the cookie must ride on a cross-site POST.
  const crossSite = config.publicUrl.startsWith('https:');
  const cookieOptions = {
    httpOnly: true,
    path: FLOW_PATH,
    secure: crossSite,
    sameSite: crossSite ? ('none' as const) : ('lax' as const),
  };
  const begin = async (reply: FastifyReply, started: Awaited<ReturnType<typeof oauth.start>>) => {
    reply.setCookie(FLOW_COOKIE, started.cookie, { ...cookieOptions, maxAge: started.maxAgeSeconds });
    return reply.redirect(started.url, 302);
  };
  const callback = (method: 'GET' | 'POST') =>
    defineRoute({
      method,
      url: '/v1/auth/oauth/:provider/callback',
      summary: `The provider's answer (${method === 'GET' ? 'query' : "Apple's form_post"}): signs in, links or creates the account, then redirects to SLIPWAY_PUBLIC_URL`,
      tags: ['Auth'],
      access: 'public',
      audit: 'OAuthSignInEvent',
      ...(method === 'POST' ? { formBody: true, bodyLimit: 64 * 1024 } : {}),
      schema: {
        params: ProviderParams,
        ...(method === 'GET' ? { querystring: CallbackParams } : { body: CallbackParams }),
      },
      handler: async (req: FastifyRequest, reply: FastifyReply) => {
        const { provider } = req.params as { provider: (typeof OAUTH_PROVIDERS)[number] };
        const input = (method === 'GET' ? req.query : req.body) as Record<string, string>;
        reply.clearCookie(FLOW_COOKIE, cookieOptions); // one use, whatever the outcome
        const done = await oauth.finish(provider, req.cookies[FLOW_COOKIE], new URLSearchParams(input));
        req.auditInfo.workspaceId = done.user.defaultWorkspaceId;
        req.auditInfo.actorEmail = done.user.email;
        req.auditInfo.target = done.user.id;
        setSessionCookie(reply, done.session, config.publicUrl);
        return reply.redirect(config.publicUrl, 302);
      },
    });
  return [
    defineRoute({
      method: 'GET',
      url: '/v1/auth/oauth/:provider/start',
      summary: "Redirects (302) to the provider's sign-in page, with PKCE, state and nonce (501 when not configured)",
      tags: ['Auth'],
      access: 'public',
      schema: {
        params: ProviderParams,
        querystring: Type.Object({
          inviteToken: Type.Optional(Type.String({ minLength: 1, maxLength: 200, description: 'Join this invite' })),
        }),
      },
      handler: async (req, reply) =>
        begin(reply, await oauth.start(req.params.provider, { invite: req.query.inviteToken })),
    }),
    defineRoute({
      method: 'GET',
      url: '/v1/auth/oauth/:provider/link',
      summary: "Like start, for a signed-in user: the provider's identity is added to this account",
      tags: ['Auth'],
      access: 'signed-in',
      schema: { params: ProviderParams },
      handler: async (req, reply) => {
        const user = requireUser(principalOf(req));
        return begin(reply, await oauth.start(req.params.provider, { linkTo: user.id }));
      },
    }),
    callback('GET'),
    callback('POST'),
    defineRoute({
      method: 'GET',
      url: '/v1/auth/identities',
      summary: 'Your sign-in identities at OAuth providers',
      tags: ['Auth'],
      access: 'signed-in',
      schema: { response: { 200: Type.Array(IdentityBody) } },
      handler: async (req) =>
        (await oauth.identities(requireUser(principalOf(req)))).map((i) => ({
          id: i.id,
          provider: i.provider,
          email: i.email,
          createdAt: i.createdAt.toISOString(),
        })),
    }),
    defineRoute({
      method: 'DELETE',
      url: '/v1/auth/identities/:identityId',
      summary: 'Unlink an identity (409 when it is your last way to sign in)',
      tags: ['Auth'],
      access: 'signed-in',
      audit: 'UnlinkIdentityEvent',
      schema: { params: Type.Object({ identityId: IdParam }), response: { 204: NoContent } },
      handler: async (req, reply) => {
        await oauth.unlink(requireUser(principalOf(req)), req.params.identityId);
        return reply.code(204).send(null);
      },
    }),
  ];
}
