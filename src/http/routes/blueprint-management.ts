import { Type } from '@sinclair/typebox';
import type { FastifyRequest } from 'fastify';
import type { BlueprintRow } from '../../store/repos/blueprints.js';
import { decodeCursor, envelope } from '../../lib/cursor.js';
import { badRequest } from '../../lib/errors.js';
import type { HttpDeps } from '../deps.js';
import { defineRoute } from '../route.js';
import { BlueprintBody, blueprintBody, BlueprintSyncBody, blueprintSyncBody } from '../schemas/blueprints.js';
import { DEFAULT_LIMIT, Envelope, IdParam, ListQuery, listWindow, Name, NoContent } from '../schemas/common.js';

const Params = Type.Object({ blueprintId: IdParam });
const TAGS = ['Blueprints'];
const Path = Type.String({ minLength: 1, maxLength: 500, description: 'The file in the source; default render.yaml' });
const Created = Type.Object({ blueprint: BlueprintBody, sync: Type.Optional(BlueprintSyncBody) });

/** Slipway's blueprint creation and sync, and Render's read, update and disconnect routes. */
export function blueprintManagementRoutes(deps: HttpDeps) {
  const { guard, blueprints } = deps;
  async function load(req: FastifyRequest, id: string) {
    const bp = await blueprints.get(id);
    await guard.resource(req, bp.workspaceId, 'blueprint');
    req.auditInfo.target = bp.id;
    return bp;
  }
  const body = async (bp: BlueprintRow) =>
    blueprintBody(bp, await blueprints.resources(bp), await blueprints.lastSync(bp));

  return [
    defineRoute({
      method: 'POST',
      url: '/v1/blueprints',
      summary: 'Create a blueprint from a repo, or from an uploaded archive (multipart: fields, then file); syncs it',
      tags: TAGS,
      access: 'developer',
      audit: 'CreateBlueprintEvent',
      formFile: true,
      schema: {
        body: Type.Object({
          ownerId: Type.Optional(Type.String({ maxLength: 64 })),
          name: Name,
          repo: Type.Optional(Type.String({ minLength: 1, maxLength: 2048 })),
          branch: Type.Optional(Type.String({ minLength: 1, maxLength: 255 })),
          path: Type.Optional(Path),
          autoSync: Type.Optional(Type.Boolean()),
        }),
        response: { 201: Created },
      },
      handler: async (req, reply) => {
        const file = req.formFile;
        try {
          const { workspaceId } = await guard.context(req, req.body.ownerId);
          if (file && req.body.repo) throw badRequest('give a repo or an archive, not both');
          const { ownerId: _, ...input } = req.body;
          const { blueprint, sync } = await blueprints.create(workspaceId, input, file);
          req.auditInfo.target = blueprint.id;
          return reply.code(201).send({ blueprint: await body(blueprint), sync: blueprintSyncBody(sync) });
        } finally {
          file?.resume();
        }
      },
    }),
    defineRoute({
      method: 'GET',
      url: '/v1/blueprints',
      summary: 'List blueprints, newest first',
      tags: TAGS,
      access: 'viewer',
      schema: {
        querystring: Type.Object({
          ownerId: Type.Optional(Type.Array(Type.String({ maxLength: 64 }), { maxItems: 50 })),
          ...ListQuery,
        }),
        response: { 200: Envelope('blueprint', BlueprintBody) },
      },
      handler: async (req) => {
        const workspaceIds = await guard.listScope(req, req.query.ownerId);
        const rows = await blueprints.list({ workspaceIds, ...listWindow(req.query) });
        return envelope('blueprint', await Promise.all(rows.map(body)));
      },
    }),
    defineRoute({
      method: 'GET',
      url: '/v1/blueprints/:blueprintId',
      summary: 'Retrieve a blueprint and the resources it manages',
      tags: TAGS,
      access: 'viewer',
      schema: { params: Params, response: { 200: BlueprintBody } },
      handler: async (req) => body(await load(req, req.params.blueprintId)),
    }),
    defineRoute({
      method: 'PATCH',
      url: '/v1/blueprints/:blueprintId',
      summary: 'Update a blueprint (name, autoSync, path)',
      tags: TAGS,
      access: 'developer',
      audit: 'UpdateBlueprintEvent',
      schema: {
        params: Params,
        body: Type.Object({
          name: Type.Optional(Name),
          autoSync: Type.Optional(Type.Boolean()),
          path: Type.Optional(Path),
        }),
        response: { 200: BlueprintBody },
      },
      handler: async (req) => body(await blueprints.update(await load(req, req.params.blueprintId), req.body)),
    }),
    defineRoute({
      method: 'DELETE',
      url: '/v1/blueprints/:blueprintId',
      summary: 'Disconnect a blueprint: its resources stay, no longer managed',
      tags: TAGS,
      access: 'developer',
      audit: 'DeleteBlueprintEvent',
      schema: { params: Params, response: { 204: NoContent } },
      handler: async (req, reply) => {
        await blueprints.remove(await load(req, req.params.blueprintId));
        return reply.code(204).send(null);
      },
    }),
    defineRoute({
      method: 'POST',
      url: '/v1/blueprints/:blueprintId/sync',
      summary: 'Sync: read the file (branch head or latest upload), plan, apply, deploy what changed',
      tags: TAGS,
      access: 'developer',
      audit: 'SyncBlueprintEvent',
      schema: {
        params: Params,
        body: Type.Optional(
          Type.Object({
            envVars: Type.Optional(
              Type.Record(Type.String({ maxLength: 256 }), Type.String({ maxLength: 65536 }), {
                description: 'Values of the file\'s "sync: false" variables',
              }),
            ),
          }),
        ),
        response: { 202: BlueprintSyncBody },
      },
      handler: async (req, reply) => {
        const bp = await load(req, req.params.blueprintId);
        const envVars = req.body?.envVars ?? {};
        if (Object.keys(envVars).length > 200) throw badRequest('at most 200 envVars');
        return reply.code(202).send(blueprintSyncBody(await blueprints.startSync(bp, { envVars })));
      },
    }),
    defineRoute({
      method: 'POST',
      url: '/v1/blueprints/:blueprintId/upload',
      summary: "A newer archive for an uploaded blueprint (its services' source); with autoSync it syncs",
      tags: TAGS,
      access: 'developer',
      audit: 'UploadBlueprintEvent',
      schema: { params: Params, response: { 200: Created } },
      handler: async (req) => {
        const bp = await load(req, req.params.blueprintId);
        const file = req.isMultipart() ? (await req.file())?.file : undefined;
        if (!file) throw badRequest('send the archive as the multipart field "file"');
        const { blueprint, sync } = await blueprints.upload(bp, file);
        return { blueprint: await body(blueprint), ...(sync ? { sync: blueprintSyncBody(sync) } : {}) };
      },
    }),
    defineRoute({
      method: 'GET',
      url: '/v1/blueprints/:blueprintId/syncs',
      summary: "A blueprint's syncs, newest first, with what each did per resource",
      tags: TAGS,
      access: 'viewer',
      schema: {
        params: Params,
        querystring: Type.Object(ListQuery),
        response: { 200: Envelope('sync', BlueprintSyncBody) },
      },
      handler: async (req) => {
        const bp = await load(req, req.params.blueprintId);
        const rows = await blueprints.syncs(bp, {
          beforeId: decodeCursor(req.query.cursor),
          limit: req.query.limit ?? DEFAULT_LIMIT,
        });
        return envelope('sync', rows.map(blueprintSyncBody));
      },
    }),
  ];
}
