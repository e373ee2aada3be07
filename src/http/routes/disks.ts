import { Type } from '@sinclair/typebox';
import type { FastifyRequest } from 'fastify';
import { envelope } from '../../lib/cursor.js';
import type { HttpDeps } from '../deps.js';
import { defineRoute } from '../route.js';
import {
  Envelope,
  IdParam,
  ListQuery,
  listWindow,
  NoContent,
  splitList,
  StringList,
  TimeFilters,
} from '../schemas/common.js';
import {
  DiskBody,
  diskBody,
  DiskPATCH,
  DiskPOST,
  SnapshotBody,
  snapshotBody,
  SnapshotRestorePOST,
} from '../schemas/disks.js';

const Params = Type.Object({ diskId: IdParam });
const TAGS = ['Disks'];

/** Render's `/v1/disks` (docs/deploys.md, "Disks"): viewers read, developers change. */
export function diskRoutes(deps: HttpDeps) {
  const { guard, disks } = deps;
  /** The disk, 404 unless the caller may see it (another workspace's is a 404). */
  async function load(req: FastifyRequest) {
    const disk = await disks.get((req.params as { diskId: string }).diskId);
    await guard.resource(req, disk.workspaceId, 'disk');
    req.auditInfo.target = disk.id;
    return disk;
  }

  return [
    defineRoute({
      method: 'POST',
      url: '/v1/disks',
      summary:
        'Add a disk to a service (mounted at mountPath; its instance restarts with it, and it runs one instance)',
      tags: TAGS,
      access: 'developer',
      audit: 'CreateServerDiskEvent',
      schema: { body: DiskPOST, response: { 201: DiskBody } },
      handler: async (req, reply) => {
        const service = await deps.services.get(req.body.serviceId);
        const { workspaceId } = await guard.resource(req, service.workspaceId, 'service');
        const created = await disks.create(workspaceId, req.body);
        req.auditInfo.target = created.id;
        return reply.code(201).send(diskBody(created));
      },
    }),
    defineRoute({
      method: 'GET',
      url: '/v1/disks',
      summary: 'List disks, newest first',
      tags: TAGS,
      access: 'viewer',
      schema: {
        querystring: Type.Object({
          ownerId: StringList,
          diskId: StringList,
          name: StringList,
          serviceId: StringList,
          ...TimeFilters,
          ...ListQuery,
        }),
        response: { 200: Envelope('disk', DiskBody) },
      },
      handler: async (req) => {
        const q = req.query;
        const rows = await disks.list({
          workspaceIds: await guard.listScope(req, splitList(q.ownerId)),
          ids: splitList(q.diskId),
          name: q.name,
          serviceIds: splitList(q.serviceId),
          ...listWindow(q),
        });
        return envelope('disk', rows.map(diskBody));
      },
    }),
    defineRoute({
      method: 'GET',
      url: '/v1/disks/:diskId',
      summary: 'Retrieve a disk',
      tags: TAGS,
      access: 'viewer',
      schema: { params: Params, response: { 200: DiskBody } },
      handler: async (req) => diskBody(await load(req)),
    }),
    defineRoute({
      method: 'PATCH',
      url: '/v1/disks/:diskId',
      summary: 'Rename a disk, grow it (never shrink) or move its mountPath: the instance restarts for the last two',
      tags: TAGS,
      access: 'developer',
      audit: 'UpdateServerDiskEvent',
      schema: { params: Params, body: DiskPATCH, response: { 200: DiskBody } },
      handler: async (req) => diskBody(await disks.update(await load(req), req.body)),
    }),
    defineRoute({
      method: 'DELETE',
      url: '/v1/disks/:diskId',
      summary: 'Delete a disk and its files and snapshots (the service runs on without it)',
      tags: TAGS,
      access: 'developer',
      audit: 'DeleteServerDiskEvent',
      schema: { params: Params, response: { 204: NoContent } },
      handler: async (req, reply) => {
        await disks.remove(await load(req));
        return reply.code(204).send(null);
      },
    }),
    defineRoute({
      method: 'GET',
      url: '/v1/disks/:diskId/snapshots',
      summary: "A disk's snapshots, newest first (daily and on request, kept 7 days)",
      tags: TAGS,
      access: 'viewer',
      schema: { params: Params, response: { 200: Type.Array(SnapshotBody) } },
      handler: async (req) => (await disks.snapshots(await load(req))).map(snapshotBody),
    }),
    defineRoute({
      method: 'POST',
      url: '/v1/disks/:diskId/snapshots',
      summary: "Take a snapshot now (Slipway's; Render takes daily ones only)",
      tags: TAGS,
      access: 'developer',
      audit: 'CreateDiskSnapshotEvent',
      schema: { params: Params, response: { 201: SnapshotBody } },
      handler: async (req, reply) => reply.code(201).send(snapshotBody(await disks.snapshot(await load(req)))),
    }),
    defineRoute({
      method: 'POST',
      url: '/v1/disks/:diskId/snapshots/restore',
      summary: 'Restore a snapshot: the service stops, the disk becomes the snapshot, the service starts again',
      tags: TAGS,
      access: 'developer',
      audit: 'RestoreDiskSnapshotEvent',
      schema: { params: Params, body: SnapshotRestorePOST, response: { 200: DiskBody } },
      handler: async (req) => diskBody(await disks.restore(await load(req), req.body.snapshotKey)),
    }),
  ];
}
