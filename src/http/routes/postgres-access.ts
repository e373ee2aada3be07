import { Type } from '@sinclair/typebox';
import type { FastifyRequest } from 'fastify';
import type { HttpDeps } from '../deps.js';
import { defineRoute, type RouteSpec } from '../route.js';
import { IdParam } from '../schemas/common.js';
import { renderDatastore } from '../helpers/render-datastore.js';
import { PostgresBody } from '../schemas/datastores.js';
import {
  CreatedCredential,
  CredentialPOST,
  PostgresCredential,
  RecoveryInfo,
  RecoveryPOST,
} from '../schemas/postgres-access.js';

const Params = Type.Object({ postgresId: IdParam });
const UserParams = Type.Object({ postgresId: IdParam, username: Type.String({ minLength: 1, maxLength: 63 }) });
const TAG = 'Postgres';

/**
 * Render's `/v1/postgres/:postgresId/credentials` (docs/datastores.md, "Exports and credentials") and `/recovery`
 * ("Backups and point-in-time recovery").
 */
export function postgresAccessRoutes(deps: HttpDeps): RouteSpec[] {
  const { guard, datastores, postgresCredentials, postgresRecovery } = deps;
  /** Another workspace's (or an unknown) datastore is a 404. */
  async function load(req: FastifyRequest) {
    const { postgresId } = req.params as { postgresId: string };
    const row = await datastores.get('postgres', postgresId);
    await guard.resource(req, row.workspaceId, 'postgres');
    req.auditInfo.target = row.id;
    return { row };
  }
  /** A recovery's source: the datastore, or a deleted one whose backups are kept (docs/datastores.md). */
  async function loadSource(req: FastifyRequest) {
    const { postgresId } = req.params as { postgresId: string };
    const source = await postgresRecovery.source(postgresId);
    await guard.resource(req, source.row.workspaceId, 'postgres');
    req.auditInfo.target = source.row.id;
    return source;
  }

  return [
    defineRoute({
      method: 'GET',
      url: '/v1/postgres/:postgresId/recovery',
      summary:
        "Point-in-time recovery's status: AVAILABLE from startsAt to endsAt (now; a deleted database's deletion, while its backups are kept), BACKUP_NOT_READY before the first base backup, NOT_AVAILABLE on the free plan",
      tags: [TAG],
      access: 'viewer',
      schema: { params: Params, response: { 200: RecoveryInfo } },
      handler: async (req) => {
        const info = await postgresRecovery.info(await loadSource(req));
        return info.recoveryStatus === 'AVAILABLE'
          ? { ...info, startsAt: info.startsAt.toISOString(), endsAt: info.endsAt.toISOString() }
          : info;
      },
    }),
    defineRoute({
      method: 'POST',
      url: '/v1/postgres/:postgresId/recovery',
      summary:
        'Restore the database (or a deleted one whose backups are kept) to restoreTime into a new Postgres datastore (its own password; the source is untouched): 400 outside the window',
      tags: [TAG],
      access: 'developer',
      audit: 'RecoverPostgresEvent',
      schema: { params: Params, body: RecoveryPOST, response: { 200: PostgresBody } },
      handler: async (req) => {
        const created = await postgresRecovery.recover(await loadSource(req), req.body);
        return renderDatastore(deps, created);
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
