import { Type } from '@sinclair/typebox';
import type { FastifyRequest } from 'fastify';
import { parseTimeRange, type LogQuery, type ParsedLogFilter } from '../../observability/logs/filters.js';
import type { SubscribeFrom } from '../../observability/logs/stream.js';
import { VALUE_LABELS } from '../../observability/logs/values.js';
import type { HttpDeps } from '../deps.js';
import { defineRoute } from '../route.js';
import { literalUnion, OwnerIdQuery, Timestamp } from '../schemas/common.js';

const Values = (description: string) =>
  Type.Optional(Type.Array(Type.String({ maxLength: 512 }), { maxItems: 50, description }));
const FILTERS = {
  ownerId: OwnerIdQuery,
  resource: Values('Service ids (default: every service of the workspace)'),
  instance: Values('Instance ids'),
  type: Values('app | build | request'),
  level: Values('Levels; `*` wildcards and /regex/ allowed'),
  text: Values('Substring of the message; `*` wildcards and /regex/ allowed'),
  method: Values('Request method (request logs)'),
  statusCode: Values('Status code (request logs), e.g. 200, 5*, /^4/'),
  path: Values('Request path (request logs)'),
  host: Values('Request host (request logs)'),
  startTime: Type.Optional(Timestamp),
  endTime: Type.Optional(Timestamp),
};
const Label = Type.Object({ name: Type.String(), value: Type.String() });
const LogEntry = Type.Object(
  { id: Type.String(), message: Type.String(), timestamp: Timestamp, labels: Type.Array(Label) },
  { title: 'logEntry', description: "Render's log entry; also each message of /v1/logs/subscribe" },
);
const LogsPage = Type.Object({
  hasMore: Type.Boolean(),
  nextStartTime: Timestamp,
  nextEndTime: Timestamp,
  logs: Type.Array(LogEntry),
});

export function logRoutes({ guard, logs }: HttpDeps) {
  /** The caller's workspace and the validated filter; another workspace's service answers 404. */
  async function prepare(req: FastifyRequest, q: LogQuery & { ownerId?: string }): Promise<ParsedLogFilter> {
    const { workspaceId } = await guard.context(req, q.ownerId);
    return logs.filterFor(workspaceId, q);
  }

  return [
    defineRoute({
      method: 'GET',
      url: '/v1/logs',
      summary: 'List logs (Render: list-logs)',
      tags: ['Logs'],
      access: 'viewer',
      schema: {
        querystring: Type.Object({
          ...FILTERS,
          direction: Type.Optional(
            Type.Union([Type.Literal('forward'), Type.Literal('backward')], { default: 'backward' }),
          ),
          limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, default: 20 })),
        }),
        response: { 200: LogsPage },
      },
      handler: async (req) => logs.page(await prepare(req, req.query), req.query),
    }),
    defineRoute({
      method: 'GET',
      url: '/v1/logs/values',
      summary:
        "List a log label's values (Render: list-logs-values) among the entries the filters match, within the same budget as /v1/logs",
      tags: ['Logs'],
      access: 'viewer',
      schema: {
        querystring: Type.Object({
          ...FILTERS,
          label: literalUnion(VALUE_LABELS, { description: 'The label whose values to list' }),
          direction: Type.Optional(Type.Union([Type.Literal('forward'), Type.Literal('backward')])),
          limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, default: 20 })),
        }),
        response: { 200: Type.Array(Type.String(), { description: 'An array of possible values for a log label' }) },
      },
      handler: async (req) => logs.values(await prepare(req, req.query), req.query),
    }),
    defineRoute({
      method: 'GET',
      url: '/v1/logs/subscribe',
      summary:
        'Subscribe to logs over a WebSocket (Render: subscribe-logs): one log entry per message; close code 4008 = too slow, reconnect with afterId; 1000 = endTime reached',
      tags: ['Logs'],
      access: 'viewer',
      schema: {
        querystring: Type.Object({
          ...FILTERS,
          afterId: Type.Optional(
            Type.String({
              pattern: '^[0-9]{1,15}$',
              description: 'Resume after this entry id (the last one received)',
            }),
          ),
        }),
        response: { 101: LogEntry },
      },
      handler: async (req) => {
        const parsed = await prepare(req, req.query);
        const { afterId } = req.query;
        return {
          parsed,
          from: { afterId: afterId !== undefined ? Number(afterId) : undefined, ...parseTimeRange(req.query) },
        };
      },
      websocket: (socket, prepared) => {
        const { parsed, from } = prepared as { parsed: ParsedLogFilter; from: SubscribeFrom };
        logs.subscribe(socket, parsed, from);
      },
    }),
  ];
}
