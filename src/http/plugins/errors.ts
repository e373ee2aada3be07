import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { randomUUID } from 'node:crypto';
import { STATUS_CODES } from 'node:http';
import type { Duplex } from 'node:stream';
import { DATE_RANGE_MESSAGE } from '../../lib/date-range.js';
import { AppError, ERROR_STATUS, type ErrorCode, type ErrorDetail } from '../../lib/errors.js';
import { NAME_PATTERN, NAME_RULE } from '../../lib/names.js';

const CODE_BY_STATUS: Partial<Record<number, ErrorCode>> = {
  400: 'bad_request',
  401: 'unauthorized',
  403: 'forbidden',
  404: 'not_found',
  409: 'conflict',
  413: 'payload_too_large',
  415: 'unsupported_media_type',
  429: 'rate_limited',
  501: 'not_configured',
  503: 'unavailable',
};

type SchemaNode = { properties?: Record<string, SchemaNode>; anyOf?: SchemaNode[]; oneOf?: SchemaNode[] };
const propertiesOf = (node: SchemaNode | undefined): Record<string, SchemaNode> =>
  Object.assign({}, node?.properties, ...[...(node?.anyOf ?? []), ...(node?.oneOf ?? [])].map((n) => n.properties));

/**
 * Where a field sent at the body's root belongs when the route's body nests it one or two levels down (Render's
 * service bodies: `plan` in `serviceDetails`, `buildCommand` in `serviceDetails.envSpecificDetails`), read from the
 * route's own schema: `PATCH {"plan": …}` says `serviceDetails.plan`.
 */
function nestedPlace(body: unknown, field: string): string | undefined {
  for (const [outer, node] of Object.entries(propertiesOf(body as SchemaNode))) {
    const inner = propertiesOf(node);
    // Own properties only: a client's `{"constructor": 1}` or `{"toString": 1}` is no schema field.
    if (Object.hasOwn(inner, field)) return `${outer}.${field}`;
    for (const [middle, deeper] of Object.entries(inner))
      if (Object.hasOwn(propertiesOf(deeper), field)) return `${outer}.${middle}.${field}`;
  }
  return undefined;
}

function validationDetails(err: FastifyError, bodySchema: unknown): ErrorDetail[] {
  return (err.validation ?? []).map((v) => {
    const params = v.params as {
      missingProperty?: string;
      additionalProperty?: string;
      format?: string;
      pattern?: string;
    };
    const path = v.instancePath.replace(/^\//, '').replace(/\//g, '.');
    const named = params.missingProperty ?? params.additionalProperty;
    const field = [path, named].filter(Boolean).join('.') || err.validationContext || 'body';
    if (params.additionalProperty) {
      const nested =
        path === '' && err.validationContext === 'body'
          ? nestedPlace(bodySchema, params.additionalProperty)
          : undefined;
      return { field, message: `is not a field of this body${nested ? `: it goes in ${nested}` : ''}` };
    }
    if (v.keyword === 'format' && params.format === 'date-time') return { field, message: DATE_RANGE_MESSAGE };
    if (v.keyword === 'pattern' && params.pattern === NAME_PATTERN) return { field, message: NAME_RULE };
    return { field, message: v.message ?? 'is invalid' };
  });
}

const OUTAGE_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', '57P01', '57P03', '08006', '08001']);

/** Connection-level failures of the store (also when wrapped by Drizzle as `cause`). */
function isStoreOutage(err: unknown): boolean {
  for (
    let e = err as { code?: string; message?: string; cause?: unknown } | undefined, depth = 0;
    e && depth < 4;
    e = e.cause as typeof e, depth++
  ) {
    if (e.code && OUTAGE_CODES.has(e.code)) return true;
    if (/Connection terminated|timeout exceeded when trying to connect/.test(e.message ?? '')) return true;
  }
  return false;
}

/** A request id of our own (the client did not give a usable one, or no request exists yet). */
export const newRequestId = () => `req-${randomUUID()}`;

export function sendError(
  request: FastifyRequest,
  reply: FastifyReply,
  code: ErrorCode,
  message: string,
  details?: ErrorDetail[],
) {
  return reply
    .code(ERROR_STATUS[code])
    .type('application/json')
    .send({ id: request.id, code, message, ...(details?.length ? { details } : {}) });
}

/** The router's own refusals (Fastify's `frameworkErrors`): no hook has run, so Request-Id is set here. */
export function sendFrameworkError(err: FastifyError, request: FastifyRequest, reply: FastifyReply) {
  reply.header('Request-Id', request.id);
  if (err.code === 'FST_ERR_BAD_URL')
    return sendError(request, reply, 'bad_request', 'the URL has a malformed %-escape');
  if (err.code === 'FST_ERR_MAX_PARAM_LENGTH')
    return sendError(request, reply, 'bad_request', 'a path segment is too long');
  request.log.error({ err }, 'router failed');
  return sendError(request, reply, 'internal_error', 'internal error; see the server log for this request id');
}

/**
 * A request Node's HTTP parser refused (control bytes in a header, headers over the size
 * limit): no request exists yet, so the reply is written to the socket, in the usual shape.
 */
export function sendClientError(err: NodeJS.ErrnoException, socket: Duplex) {
  if (err.code === 'ECONNRESET' || socket.destroyed) return;
  const [status, message] =
    err.code === 'HPE_HEADER_OVERFLOW'
      ? [431, 'the request headers are too large']
      : err.code === 'ERR_HTTP_REQUEST_TIMEOUT'
        ? [408, 'the request took too long to arrive']
        : [400, 'malformed HTTP request'];
  const id = newRequestId();
  const body = JSON.stringify({ id, code: 'bad_request', message });
  // Not into a response already under way on this connection (a pipelined request), as Node does.
  const inFlight = (socket as Duplex & { _httpMessage?: { headersSent?: boolean } })._httpMessage?.headersSent;
  if (socket.writable && !inFlight) {
    socket.write(
      `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n` +
        `Request-Id: ${id}\r\nConnection: close\r\n\r\n${body}`,
    );
  }
  socket.destroy();
}

/** Every error leaves as `{id, code, message, details?}`; nothing internal leaks from a 500. */
/**
 * `pageFallback` answers a request no route matched when it is the dashboard's (a deep link the browser asks for as a
 * page): it returns whether it did.
 */
export function registerErrorHandling(
  app: FastifyInstance,
  pageFallback?: (request: FastifyRequest, reply: FastifyReply) => boolean,
) {
  app.setErrorHandler((err: FastifyError, request, reply) => {
    if (err instanceof AppError) {
      if (err.retryAfterSeconds) reply.header('Retry-After', String(err.retryAfterSeconds));
      return sendError(request, reply, err.code, err.message, err.details);
    }
    if (err.validation) {
      return sendError(
        request,
        reply,
        'validation_failed',
        `invalid ${err.validationContext ?? 'request'}`,
        validationDetails(err, request.routeOptions.schema?.body),
      );
    }
    if (isStoreOutage(err)) {
      request.log.error({ err }, 'state store unavailable');
      return sendError(request, reply, 'unavailable', 'the state store is unavailable; retry shortly');
    }
    const status = err.statusCode ?? 500;
    const code = status < 500 ? (CODE_BY_STATUS[status] ?? 'bad_request') : CODE_BY_STATUS[status];
    if (code && status < 500) return sendError(request, reply, code, err.message);
    request.log.error({ err }, 'request failed');
    return sendError(
      request,
      reply,
      code ?? 'internal_error',
      code ? err.message : 'internal error; see the server log for this request id',
    );
  });
  app.setNotFoundHandler((request, reply) => {
    if (pageFallback?.(request, reply)) return reply;
    return sendError(request, reply, 'not_found', `no route ${request.method} ${request.url.split('?')[0]}`);
  });
}
