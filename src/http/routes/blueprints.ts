import { Type } from '@sinclair/typebox';
import type { Readable } from 'node:stream';
import { MAX_BLUEPRINT_BYTES } from '../../core/blueprints/source.js';
import { AppError, badRequest } from '../../lib/errors.js';
import type { HttpDeps } from '../deps.js';
import { defineRoute } from '../route.js';
import { BlueprintValidationBody } from '../schemas/blueprints.js';
import { OwnerIdQuery } from '../schemas/common.js';

const tooLarge = () =>
  new AppError('payload_too_large', `the Blueprint file is over ${MAX_BLUEPRINT_BYTES / 1024 / 1024} MB`);

/** The uploaded render.yaml's bytes, read up to MAX_BLUEPRINT_BYTES (a worker decodes and parses them). */
async function readFile(file: Readable): Promise<Uint8Array> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of file as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_BLUEPRINT_BYTES) {
      file.destroy();
      throw tooLarge();
    }
    chunks.push(chunk);
  }
  if ((file as Readable & { truncated?: boolean }).truncated) throw tooLarge();
  return Buffer.concat(chunks);
}

export function blueprintRoutes(deps: HttpDeps) {
  const { guard, blueprints } = deps;
  return [
    defineRoute({
      method: 'POST',
      url: '/v1/blueprints/validate',
      summary: 'Validate a render.yaml (multipart: ownerId, file): errors with their lines, or the plan',
      tags: ['Blueprints'],
      access: 'developer',
      audit: 'ValidateBlueprintEvent',
      formFile: true,
      schema: {
        // Render sends ownerId as a form field (before the file); Slipway also takes it in the query.
        querystring: Type.Object({ ownerId: OwnerIdQuery }),
        body: Type.Object({ ownerId: Type.Optional(Type.String({ maxLength: 64 })) }),
        response: { 200: BlueprintValidationBody },
      },
      handler: async (req) => {
        const file = req.formFile;
        try {
          const { ownerId } = req.body;
          if (req.query.ownerId && ownerId && ownerId !== req.query.ownerId)
            throw badRequest('ownerId differs between the query and the form');
          // Authorized before anything else, the file included, is read.
          const { workspaceId } = await guard.context(req, req.query.ownerId ?? ownerId);
          if (!req.isMultipart())
            throw new AppError('unsupported_media_type', 'send multipart/form-data with ownerId and file');
          if (!file) throw badRequest('the multipart body has no file field (the render.yaml)');
          const { valid, errors, plan } = await blueprints.validate(workspaceId, await readFile(file));
          return valid ? { valid, plan } : { valid, errors };
        } finally {
          file?.resume();
        }
      },
    }),
  ];
}
