import { createReadStream } from 'node:fs';
import { Type } from '@sinclair/typebox';
import type { FastifyRequest } from 'fastify';
import { forbidden } from '../../lib/errors.js';
import type { DatastoreRow } from '../../store/repos/datastores.js';
import type { HttpDeps } from '../deps.js';
import { defineRoute, type RouteSpec } from '../route.js';
import { IdParam } from '../schemas/common.js';
import {
  CreatedCredential,
  CredentialPOST,
  exportBody,
  PostgresCredential,
  PostgresExport,
} from '../schemas/postgres-access.js';

const Params = Type.Object({ postgresId: IdParam });
const ExportParams = Type.Object({ postgresId: IdParam, exportId: IdParam });
const UserParams = Type.Object({ postgresId: IdParam, username: Type.String({ minLength: 1, maxLength: 63 }) });
const TAG = 'Postgres';

/** Render's `/v1/postgres/:postgresId/export` and `/credentials` (docs/datastores.md, "Postgres exports and credentials"). */
export function postgresAccessRoutes(deps: HttpDeps): RouteSpec[] {
  const { guard, datastores, postgresExports, postgresCredentials, config } = deps;
  /** Another workspace's (or an unknown) datastore is a 404; `atLeast` overrides the route's declared role. */
  async function load(req: FastifyRequest, atLeast?: 'viewer') {
    const { postgresId } = req.params as { postgresId: string };
    const row = await datastores.get('postgres', postgresId);
    const { role } = await guard.resource(req, row.workspaceId, 'postgres', atLeast);
    req.auditInfo.target = row.id;
    return { row, role };
  }
  const downloadUrl = (row: DatastoreRow, exportId: string) =>
    `${config.publicUrl}/v1/postgres/${row.id}/export/${exportId}/download`;

  return [
    defineRoute({
      method: 'POST',
      url: '/v1/postgres/:postgresId/export',
      summary: 'Start a pg_dump (custom format) of the database: 202, listed as running until it is done',
      tags: [TAG],
      access: 'developer',
      audit: 'CreatePostgresExportEvent',
      schema: { params: Params, response: { 202: PostgresExport } },
      handler: async (req, reply) => {
        const { row } = await load(req);
        const started = await postgresExports.create(row);
        return reply.code(202).send(exportBody(started.row, downloadUrl(row, started.row.id)));
      },
    }),
    defineRoute({
      method: 'GET',
      url: '/v1/postgres/:postgresId/export',
      summary: 'List exports of the last 7 days, newest first, each with its download URL once done',
      tags: [TAG],
      access: 'viewer',
      schema: { params: Params, response: { 200: Type.Array(PostgresExport) } },
      handler: async (req) => {
        const { row } = await load(req);
        return (await postgresExports.list(row)).map((e) => exportBody(e, downloadUrl(row, e.id)));
      },
    }),
    defineRoute({
      method: 'GET',
      url: '/v1/postgres/:postgresId/export/:exportId/download',
      summary: 'Download an export (pg_restore reads it), streamed',
      tags: [TAG],
      access: 'developer',
      audit: 'DownloadDatabaseBackupEvent',
      schema: {
        params: ExportParams,
        response: { 200: Type.String({ format: 'binary', description: 'The pg_dump file (custom format)' }) },
      },
      handler: async (req, reply) => {
        // Viewers read the list but not the data: their 403 says so (members of other workspaces get a 404).
        const { row, role } = await load(req, 'viewer');
        if (role === 'viewer') throw forbidden('viewers cannot download exports');
        const file = await postgresExports.file(row, (req.params as { exportId: string }).exportId);
        return reply
          .type('application/octet-stream')
          .header('content-length', file.size)
          .header('content-disposition', `attachment; filename="${file.name}"`)
          .send(createReadStream(file.path) as never); // piped as it is read, never buffered whole
      },
    }),
    defineRoute({
      method: 'GET',
      url: '/v1/postgres/:postgresId/credentials',
      summary: 'List the database users: the default one first, with their open connections',
      tags: [TAG],
      access: 'viewer',
      schema: { params: Params, response: { 200: Type.Array(PostgresCredential) } },
      handler: async (req) => postgresCredentials.list((await load(req)).row),
    }),
    defineRoute({
      method: 'POST',
      url: '/v1/postgres/:postgresId/credentials',
      summary: 'Create a database user with full read/write (202); its password is in this answer only',
      tags: [TAG],
      access: 'developer',
      audit: 'CreatePostgresCredentialEvent',
      schema: { params: Params, body: CredentialPOST, response: { 202: CreatedCredential } },
      handler: async (req, reply) => {
        const { row } = await load(req);
        return reply.code(202).send(await postgresCredentials.create(row, req.body.username));
      },
    }),
    defineRoute({
      method: 'DELETE',
      url: '/v1/postgres/:postgresId/credentials/:username',
      summary: 'Drop a database user (not the default one: 409); its open sessions end',
      tags: [TAG],
      access: 'developer',
      audit: 'DeletePostgresCredentialEvent',
      schema: { params: UserParams, response: { 200: Type.Null({ description: 'Deleted' }) } },
      handler: async (req, reply) => {
        const { row } = await load(req);
        await postgresCredentials.remove(row, (req.params as { username: string }).username);
        return reply.code(200).send(null);
      },
    }),
  ];
}
