import { badRequest, notFound } from '../../lib/errors.js';
import { constantTimeEqual, hashToken, randomToken } from '../../lib/tokens.js';
import type { DeployRow } from '../../store/repos/deploys.js';
import type { DeployTriggerRepo } from '../../store/repos/deploy-triggers.js';
import type { ServiceRow } from '../../store/repos/services.js';
import type { DeployEngine } from './engine.js';

const KEY_PREFIX = 'dhk_';

/**
 * Render's deploy hooks: a secret URL per service that deploys it (CI without the GitHub App, any git host).
 * The key is kept as a digest and shown once, when it is made; a wrong key is a 404, as for a service that
 * does not exist.
 */
export function createDeployHooks(deps: {
  repo: Pick<DeployTriggerRepo, 'hookOf' | 'putHook' | 'removeHook'>;
  services: { get(id: string): Promise<ServiceRow | undefined> };
  engine: Pick<DeployEngine, 'trigger'>;
  /** The URL the hook is served at: `<public URL>/deploy/<service id>`. */
  hookUrl: (serviceId: string) => string;
}) {
  const { repo } = deps;
  const view = (serviceId: string, row: { keyHint: string; createdAt: Date } | undefined) => ({
    enabled: row !== undefined,
    url: deps.hookUrl(serviceId),
    keyHint: row?.keyHint ?? null,
    createdAt: row?.createdAt ?? null,
  });
  return {
    describe: async (service: ServiceRow) => view(service.id, await repo.hookOf(service.id)),
    /** A new key (the old one stops working at once); the only time the key is shown. */
    async rotate(service: ServiceRow) {
      const key = randomToken(KEY_PREFIX);
      const row = await repo.putHook(service.id, hashToken(key), key.slice(-4));
      return { ...view(service.id, row), key, url: `${deps.hookUrl(service.id)}?key=${key}` };
    },
    async remove(service: ServiceRow) {
      if (!(await repo.removeHook(service.id))) throw notFound('deploy hook');
    },
    /** A call of the hook: the branch's head, or the commit `ref` names. */
    async fire(serviceId: string, key: string, ref?: string): Promise<{ service: ServiceRow; deploy: DeployRow }> {
      const hook = await repo.hookOf(serviceId);
      // Hash first, whatever the hook: the answer takes as long for a wrong service as for a wrong key.
      const digest = hashToken(key);
      if (!hook || !constantTimeEqual(digest, hook.keyHash)) throw notFound('service');
      const service = await deps.services.get(serviceId);
      if (!service) throw notFound('service');
      if (ref && !service.repo)
        throw badRequest('ref picks a commit of a git repo: this service deploys uploaded archives');
      return { service, deploy: await deps.engine.trigger(service, { trigger: 'deploy_hook', commitId: ref }) };
    },
  };
}
export type DeployHooks = ReturnType<typeof createDeployHooks>;
