import { createReadStream } from 'node:fs';
import { Type } from '@sinclair/typebox';
import type { FastifyRequest } from 'fastify';
import { forbidden } from '../../lib/errors.js';
import type { DatastoreKind, DatastoreRow } from '../../store/repos/datastores.js';
import type { HttpDeps } from '../deps.js';
import { defineRoute, type RouteSpec } from '../route.js';
import { IdParam } from '../schemas/common.js';
import { DatastoreExport, exportBody } from '../schemas/postgres-access.js';

interface ExportFamily {
  kind: DatastoreKind;
  /** `/v1/postgres/:postgresId` or `/v1/key-value/:keyValueId`. */
  base: string;
  param: 'postgresId' | 'keyValueId';
  tag: string;
  what: string;
  /** What the file is, as the summaries say it. */
  format: string;
  audit: 'CreatePostgresExportEvent' | 'CreateKeyValueExportEvent';
}

const FAMILIES: ExportFamily[] = [
  {
    kind: 'postgres',
    base: '/v1/postgres/:postgresId',
    param: 'postgresId',
    tag: 'Postgres',
    what: 'postgres',
    format: 'a pg_dump (custom format) of the database; pg_restore reads it',
    audit: 'CreatePostgresExportEvent',
  },
  {
    kind: 'keyValue',
    base: '/v1/key-value/:keyValueId',
    param: 'keyValueId',
    tag: 'Key Value',
    what: 'key-value instance',
    format: "an RDB snapshot of the server's data; redis-server and valkey-server load it",
    audit: 'CreateKeyValueExportEvent',
  },
];

/**
 * Exports of a datastore, kept 7 days (docs/datastores.md, "Exports and credentials"): Render's `/v1/postgres/:id/export`, and the
 * same for key-value (Slipway's; Render has none). Viewers list them; developers and up make and download them.
 */
export function datastoreExportRoutes(deps: HttpDeps): RouteSpec[] {
  return FAMILIES.flatMap((f) => routesOf(deps, f));
}

function routesOf(deps: HttpDeps, f: ExportFamily): RouteSpec[] {
  const { guard, datastores, datastoreExports, config } = deps;
  const Params = Type.Object({ [f.param]: IdParam });
  const ExportParams = Type.Object({ [f.param]: IdParam, exportId: IdParam });
  /** Another workspace's (or an unknown) datastore is a 404; `atLeast` overrides the route's declared role. */
  async function load(req: FastifyRequest, atLeast?: 'viewer') {
    const row = await datastores.get(f.kind, (req.params as Record<string, string>)[f.param]!);
    const { role } = await guard.resource(req, row.workspaceId, f.what, atLeast);
    req.auditInfo.target = row.id;
    return { row, role };
  }
  const downloadUrl = (row: DatastoreRow, exportId: string) =>
    `${config.publicUrl}${f.base.replace(`:${f.param}`, row.id)}/export/${exportId}/download`;

  return [
    defineRoute({
      method: 'POST',
      url: `${f.base}/export`,
      summary: `Start an export, ${f.format}: 202, listed as running until it is done`,
      tags: [f.tag],
      access: 'developer',
      audit: f.audit,
      schema: { params: Params, response: { 202: DatastoreExport } },
      handler: async (req, reply) => {
        const { row } = await load(req);
        const started = await datastoreExports.create(row);
        return reply.code(202).send(exportBody(started.row, downloadUrl(row, started.row.id)));
      },
    }),
    defineRoute({
      method: 'GET',
      url: `${f.base}/export`,
      summary: 'List exports of the last 7 days, newest first, each with its download URL once done',
      tags: [f.tag],
      access: 'viewer',
      schema: { params: Params, response: { 200: Type.Array(DatastoreExport) } },
      handler: async (req) => {
        const { row } = await load(req);
        return (await datastoreExports.list(row)).map((e) => exportBody(e, downloadUrl(row, e.id)));
      },
    }),
    defineRoute({
      method: 'GET',
      url: `${f.base}/export/:exportId/download`,
      summary: `Download an export (${f.format}), streamed`,
      tags: [f.tag],
      access: 'developer',
      audit: 'DownloadDatabaseBackupEvent',
      schema: {
        params: ExportParams,
        response: { 200: Type.String({ format: 'binary', description: `The export: ${f.format}` }) },
      },
      handler: async (req, reply) => {
        // Viewers read the list but not the data: their 403 says so (members of other workspaces get a 404).
        const { row, role } = await load(req, 'viewer');
        if (role === 'viewer') throw forbidden('viewers cannot download exports');
        const file = await datastoreExports.file(row, (req.params as { exportId: string }).exportId);
        return reply
          .type('application/octet-stream')
          .header('content-length', file.size)
          .header('content-disposition', `attachment; filename="${file.name}"`)
          .send(createReadStream(file.path) as never); // piped as it is read, never buffered whole
      },
    }),
  ];
}
