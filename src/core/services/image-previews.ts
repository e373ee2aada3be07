import { badRequest } from '../../lib/errors.js';
import type { Plan } from '../../model/services.js';
import type { ServiceRow } from '../../store/repos/services.js';
import { copyVars } from './copy-vars.js';
import type { EnvVarInput, EnvVars } from './env-vars.js';
import type { ServiceType } from '../../model/enums.js';

/** `registry/name` of a reference, without its tag or digest. */
const repositoryOf = (ref: string) => ref.replace(/@sha256:[a-f0-9]+$/, '').replace(/:[\w][\w.-]*$/, '');

/**
 * Render's rule for a preview's imagePath: the base service's image with another tag or digest, written whole
 * (`docker.io/library/nginx:1.27`) or as the end of its path (`library/nginx:1.27`, `nginx@sha256:…`).
 */
export function previewImagePath(base: string, requested: string): string {
  const repository = repositoryOf(base);
  const asked = repositoryOf(requested);
  const version = requested.slice(asked.length);
  if (!version) throw badRequest('imagePath must name a tag or a digest (name:tag or name@sha256:…)');
  if (asked !== repository && !repository.endsWith(`/${asked}`))
    throw badRequest(`imagePath must be the base service's image (${repository}) with another tag or digest`);
  return repository + version;
}

/**
 * Render's `POST /v1/services/:id/preview`: a copy of an image service (its settings and env vars, `parentServer`
 * naming it) that runs another tag or digest of its image, deployed at once. Deleted like any service.
 */
export async function createImagePreview(
  deps: {
    envVars: Pick<EnvVars, 'list'>;
    create(
      workspaceId: string,
      input: { type: ServiceType; name: string; environmentId?: string; envVars: EnvVarInput[] },
      opts: { details: ServiceRow['details'] },
    ): Promise<{ service: ServiceRow; deployId?: string }>;
  },
  parent: ServiceRow,
  input: { imagePath: string; name?: string; plan?: Plan },
): Promise<{ service: ServiceRow; deployId?: string }> {
  const image = parent.details.image;
  if (parent.details.runtime !== 'image' || !image)
    throw badRequest('previews are for image services (runtime image): this service builds its own');
  const imagePath = previewImagePath(image.imagePath, input.imagePath);
  const version = imagePath
    .slice(repositoryOf(imagePath).length + 1)
    .replace(/^sha256:/, '')
    .slice(0, 12);
  return deps.create(
    parent.workspaceId,
    {
      type: parent.type,
      name: input.name ?? `${parent.name}-${version}`.slice(0, 100),
      environmentId: parent.environmentId ?? undefined,
      envVars: await copyVars(deps.envVars, parent),
    },
    {
      details: {
        ...parent.details,
        plan: input.plan ?? parent.details.plan,
        image: { ...image, imagePath },
        previews: { generation: 'off' },
        parentServer: { id: parent.id, name: parent.name },
      },
    },
  );
}
