import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { OptionalKind } from '@sinclair/typebox';
import type {
  ContextConfigDefault,
  FastifyInstance,
  FastifyReply,
  FastifyRequest,
  FastifySchema,
  RawReplyDefaultExpression,
  RawRequestDefaultExpression,
  RawServerDefault,
  RouteGenericInterface,
} from 'fastify';
import type { Role } from '../core/principal.js';
import { badRequest } from '../lib/errors.js';
import { ErrorBody } from './schemas/common.js';

/**
 * Who may call a route: `public` (no credentials), `signed-in` (any principal), or a
 * role: the minimum role in the workspace the request acts on (checked by `guard`), or
 * `operator`: the operator token only (others get 403), for routes outside any workspace.
 */
export type RouteAccess = 'public' | 'signed-in' | 'operator' | Role;

declare module 'fastify' {
  interface FastifyContextConfig {
    access?: RouteAccess;
    /** Audit event name written for this mutating route (Render's names where they exist). */
    audit?: string;
    /** Keep the JSON body's exact text as `request.rawBody` (a signature is computed over it). */
    rawBody?: boolean;
    /** The body may come as an HTML form (application/x-www-form-urlencoded). */
    formBody?: boolean;
  }
  interface FastifyRequest {
    rawBody?: string;
    /** A `formFile` route's uploaded file, when the body came as multipart/form-data (read it, or resume it). */
    formFile?: import('node:stream').Readable;
  }
}

type Request<S extends FastifySchema> = FastifyRequest<
  RouteGenericInterface,
  RawServerDefault,
  RawRequestDefaultExpression,
  S,
  TypeBoxTypeProvider
>;
type Reply<S extends FastifySchema> = FastifyReply<
  RouteGenericInterface,
  RawServerDefault,
  RawRequestDefaultExpression,
  RawReplyDefaultExpression,
  ContextConfigDefault,
  S,
  TypeBoxTypeProvider
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
  /** Keep the JSON body's exact text as `req.rawBody` (signed webhooks). */
  rawBody?: boolean;
  /** The body may come as an HTML form (application/x-www-form-urlencoded): an OAuth provider's form_post. */
  formBody?: boolean;
  /**
   * The body may also come as multipart/form-data: its fields are validated by the body schema as a JSON body would be
   * (form values are strings, coerced as the schema says), and its one file, sent after them, is `req.formFile`.
   */
  formFile?: boolean;
  schema: S;
  /** Marked `deprecated: true` in the OpenAPI document (Render's deprecated aliases, such as `/v1/redis`). */
  deprecated?: boolean;
  /**
   * Runs before the body is read: what can be refused from the headers is refused without buffering it (GitHub's
   * webhook, whose 25 MB bodies are unverified until read).
   */
  beforeBody?: (req: FastifyRequest, reply: FastifyReply) => Promise<void>;
  handler: (req: Request<S>, reply: Reply<S>) => Promise<unknown>;
  /**
   * A WebSocket route (GET): `handler` runs first, before the upgrade (so auth, validation and
   * authorization errors are plain HTTP answers), and what it returns is handed to `websocket`
   * with the upgraded socket. A GET without an upgrade gets a 400.
   */
  websocket?: (socket: import('ws').WebSocket, prepared: unknown) => void;
}

export const defineRoute = <S extends FastifySchema>(spec: RouteSpec<S>): RouteSpec => spec as unknown as RouteSpec;

const UNSAFE = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);
const errorResponses = (spec: RouteSpec) => {
  const codes = [400, 429, 500, 503];
  if (spec.access !== 'public') codes.push(401, 403, 404);
  if (UNSAFE.has(spec.method)) codes.push(402, 409, 413, 415);
  return Object.fromEntries(codes.map((c) => [c, ErrorBody]));
};

export function registerRoutes(app: FastifyInstance, routes: RouteSpec[]) {
  for (const spec of routes) {
    if (UNSAFE.has(spec.method) && !spec.audit)
      throw new Error(`${spec.method} ${spec.url} must declare an audit event`);
    if (UNSAFE.has(spec.method) && spec.access === 'viewer')
      throw new Error(`${spec.method} ${spec.url}: viewers only read`);
    const schema =
      spec.method === 'PATCH'
        ? { ...(spec.schema as Record<string, unknown>), body: closed(spec.schema.body) }
        : (spec.schema as Record<string, unknown>);
    const ws = spec.websocket;
    const prepared = new WeakMap<object, unknown>();
    app.route({
      method: spec.method,
      url: spec.url,
      bodyLimit: spec.bodyLimit,
      config: {
        access: spec.access,
        audit: spec.audit,
        ...(spec.rawBody ? { rawBody: true } : {}),
        ...(spec.formBody ? { formBody: true } : {}),
        ...(spec.rateLimit ? { rateLimit: spec.rateLimit } : {}),
      },
      schema: {
        ...schema,
        summary: spec.summary,
        tags: spec.tags,
        operationId: `${spec.method.toLowerCase()}${spec.url.replace(/[^a-zA-Z0-9]+(.)?/g, (_, c: string | undefined) => (c ?? '').toUpperCase())}`,
        response: { ...errorResponses(spec), ...(schema.response as object) },
        ...(spec.access === 'public' ? { security: [] } : {}),
        ...(spec.deprecated ? { deprecated: true } : {}),
        'x-slipway-access': spec.access,
      },
      ...(spec.beforeBody ? { onRequest: [spec.beforeBody] } : {}),
      preValidation: [
        ...(spec.formFile ? [formFieldsReader(schema.body)] : []),
        // An optional body (Type.Optional): a POST without one is an empty object, as Render takes it.
        ...(schema.body && OptionalKind in (schema.body as object) ? [noBodyAsEmpty] : []),
      ],
      handler: (ws
        ? async (req: FastifyRequest, reply: FastifyReply) => {
            await spec.handler(req as never, reply as never);
            throw badRequest('this route is a WebSocket: send an Upgrade request');
          }
        : spec.handler) as never,
      ...(ws
        ? {
            preHandler: async (req: FastifyRequest, reply: FastifyReply) => {
              if (req.ws) prepared.set(req.raw, await spec.handler(req as never, reply as never));
            },
            wsHandler: (socket: import('ws').WebSocket, req: FastifyRequest) => ws(socket, prepared.get(req.raw)),
          }
        : {}),
    });
  }
}

/**
 * A PATCH body, every object in it closed to fields it does not declare: a PATCH never drops a field silently (a Render
 * client sending `autoscaling` would believe the setting took); it applies the field or answers 400 naming it.
 */
function closed(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(closed);
  if (!schema || typeof schema !== 'object') return schema;
  const s = schema as Record<string | symbol, unknown>;
  const out: Record<string | symbol, unknown> = { ...s };
  for (const key of ['anyOf', 'oneOf', 'allOf', 'items'] as const) if (s[key]) out[key] = closed(s[key]);
  if (s.properties && typeof s.properties === 'object')
    out.properties = Object.fromEntries(Object.entries(s.properties).map(([k, v]) => [k, closed(v)]));
  if (s.type === 'object' && s.properties && s.additionalProperties === undefined) out.additionalProperties = false;
  return out;
}

/**
 * A `formFile` route's multipart body: its fields become `req.body`, read as the body schema declares them (a form
 * sends text: `autoSync=false` is the boolean false, `5` a number where one is declared; anything else stays text
 * for the schema to refuse), its file stream `req.formFile` (unread).
 */
function formFieldsReader(body: unknown) {
  const declared = (body as { properties?: Record<string, { type?: string }> } | undefined)?.properties ?? {};
  const asDeclared = (name: string, value: unknown) => {
    const type = Object.hasOwn(declared, name) ? declared[name]!.type : undefined;
    if (typeof value !== 'string') return value;
    if (type === 'boolean' && (value === 'true' || value === 'false')) return value === 'true';
    if ((type === 'integer' || type === 'number') && /^-?\d+(\.\d+)?$/.test(value)) return Number(value);
    return value;
  };
  return async function readFormFields(req: FastifyRequest) {
    if (!req.isMultipart()) return;
    const fields: Record<string, unknown> = {};
    for await (const part of req.parts()) {
      if (part.type === 'field') {
        fields[part.fieldname] = asDeclared(part.fieldname, part.value);
        continue;
      }
      req.formFile = part.file;
      break; // the handler streams the file; fields after it are not read
    }
    req.body = fields;
  };
}

async function noBodyAsEmpty(req: FastifyRequest) {
  req.body ??= {};
}
