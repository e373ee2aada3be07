import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type {
  ContextConfigDefault, FastifyInstance, FastifyReply, FastifyRequest, FastifySchema,
  RawReplyDefaultExpression, RawRequestDefaultExpression, RawServerDefault, RouteGenericInterface,
} from 'fastify';
import type { Role } from '../core/principal.js';
import { ErrorBody } from './schemas/common.js';

/**
 * Who may call a route: `public` (no credentials), `signed-in` (any principal), or a
 * role: the minimum role in the workspace the request acts on (checked by `guard`).
 */
export type RouteAccess = 'public' | 'signed-in' | Role;

declare module 'fastify' {
  interface FastifyContextConfig {
    access?: RouteAccess;
    /** Audit event name written for this mutating route (Render's names where they exist). */
    audit?: string;
  }
}

type Request<S extends FastifySchema> = FastifyRequest<RouteGenericInterface, RawServerDefault, RawRequestDefaultExpression, S, TypeBoxTypeProvider>;
type Reply<S extends FastifySchema> = FastifyReply<
  RouteGenericInterface, RawServerDefault, RawRequestDefaultExpression, RawReplyDefaultExpression, ContextConfigDefault, S, TypeBoxTypeProvider
>;

/** A route declaration is the whole contract: method, path, schema, access, audit, limits, docs. */
export interface RouteSpec<S extends FastifySchema = FastifySchema> {
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  url: string;
  summary: string;
  tags: string[];
  access: RouteAccess;
  audit?: string;
  /** Overrides the global per-credential rate limit. */
  rateLimit?: { max: number; timeWindow: number | string; keyGenerator?: (req: FastifyRequest) => string };
  bodyLimit?: number;
  schema: S;
  handler: (req: Request<S>, reply: Reply<S>) => Promise<unknown>;
}

export const defineRoute = <S extends FastifySchema>(spec: RouteSpec<S>): RouteSpec => spec as unknown as RouteSpec;

const UNSAFE = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);
const errorResponses = (spec: RouteSpec) => {
  const codes = [400, 429, 500, 503];
  if (spec.access !== 'public') codes.push(401, 403, 404);
  if (UNSAFE.has(spec.method)) codes.push(409, 413, 415);
  return Object.fromEntries(codes.map((c) => [c, ErrorBody]));
};

export function registerRoutes(app: FastifyInstance, routes: RouteSpec[]) {
  for (const spec of routes) {
    if (UNSAFE.has(spec.method) && !spec.audit) throw new Error(`${spec.method} ${spec.url} must declare an audit event`);
    if (UNSAFE.has(spec.method) && spec.access === 'viewer') throw new Error(`${spec.method} ${spec.url}: viewers only read`);
    const schema = spec.schema as Record<string, unknown>;
    app.route({
      method: spec.method,
      url: spec.url,
      bodyLimit: spec.bodyLimit,
      config: { access: spec.access, audit: spec.audit, ...(spec.rateLimit ? { rateLimit: spec.rateLimit } : {}) },
      schema: {
        ...schema,
        summary: spec.summary,
        tags: spec.tags,
        operationId: `${spec.method.toLowerCase()}${spec.url.replace(/[^a-zA-Z0-9]+(.)?/g, (_, c: string | undefined) => (c ?? '').toUpperCase())}`,
        response: { ...errorResponses(spec), ...(schema.response as object) },
        ...(spec.access === 'public' ? { security: [] } : {}),
        'x-slipway-access': spec.access,
      },
      handler: spec.handler as never,
    });
  }
}
