import multipart from '@fastify/multipart';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Readable } from 'node:stream';
import { AppError } from '../../lib/errors.js';
import type { HttpDeps } from '../deps.js';
import { defineRoute } from '../route.js';
import { SourceBody, sourceBody } from '../schemas/sources.js';
import { loadService, ServiceParams } from '../helpers/load-service.js';

export const ARCHIVE_TYPES = [
  'application/gzip',
  'application/x-gzip',
  'application/x-tar',
  'application/x-compressed-tar',
  'application/zip',
  'application/x-zip-compressed',
  'application/octet-stream',
];

/** Archives arrive as a raw body (streamed, never buffered) or as one multipart file field. */
export async function registerUploadParsers(app: FastifyInstance, maxUploadBytes: number) {
  app.addContentTypeParser(ARCHIVE_TYPES, (_req, payload, done) => done(null, payload));
  await app.register(multipart, { limits: { files: 1, fileSize: maxUploadBytes, fields: 5 } });
}

async function archiveStream(req: FastifyRequest): Promise<Readable> {
  if (req.isMultipart()) {
    const file = await req.file();
    if (!file) throw new AppError('bad_request', 'the multipart body has no file field');
    return file.file;
  }
  if (!req.body || typeof (req.body as Readable).pipe !== 'function') {
    throw new AppError(
      'unsupported_media_type',
      `send the archive as ${ARCHIVE_TYPES.slice(0, 1).join('')}/application/zip/application/octet-stream or multipart/form-data`,
    );
  }
  return req.body as Readable;
}

export function sourceUploadRoutes(deps: HttpDeps) {
  return [
    defineRoute({
      method: 'POST',
      url: '/v1/services/:serviceId/source/upload',
      summary: 'Upload a source archive (.tar.gz, .tgz or .zip); deploys it when autoDeploy is yes',
      tags: ['Deploys'],
      access: 'developer',
      audit: 'UploadSourceEvent',
      schema: {
        params: ServiceParams,
        response: {
          201: SourceBody,
        },
      },
      handler: async (req, reply) => {
        const service = await loadService(deps, req, req.params.serviceId);
        const { source, deploy } = await deps.deploys.uploadSource(service, () => archiveStream(req));
        return reply.code(201).send(sourceBody(source, deploy));
      },
    }),
  ];
}
