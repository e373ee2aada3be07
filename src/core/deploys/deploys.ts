import type { Readable } from 'node:stream';
import { notFound } from '../../lib/errors.js';
import type { DeployQuery, DeployRepo, DeployRow, SourceRow } from '../../store/repos/deploys.js';
import type { ServiceRow } from '../../store/repos/services.js';
import { cacheKey, type ReadCache } from '../read-cache.js';
import type { DeployEngine } from './engine.js';
import type { LinkSource, SaveUpload } from './sources.js';

/**
 * Render's deployMode: `deploy_only` ("deploy without building") runs the live deploy's artifact with the service's
 * settings as they are now, its start command included (redeploy.ts).
 */
export type DeployMode = 'deploy_only' | 'build_and_deploy';

/**
 * Render's autoDeploy rule, for every new source a service gets (a repo at creation, an uploaded archive):
 * it deploys it when autoDeploy is `yes` and the service is not suspended.
 */
export const deploysNewSource = (service: Pick<ServiceRow, 'autoDeploy' | 'suspenders'>) =>
  service.autoDeploy === 'yes' && !service.suspenders.includes('user');

/** The deploys of one service as the API acts on them: read, trigger, and upload a source (docs/architecture.md, "Deploys"). */
export function createDeploys(deps: {
  repo: Pick<DeployRepo, 'get' | 'list' | 'liveOf'>;
  engine: Pick<DeployEngine, 'trigger' | 'writingTo'>;
  saveUpload: SaveUpload;
  linkSource: LinkSource;
  cache: ReadCache;
}) {
  const { repo, engine } = deps;
  return {
    /** The service's deploy, else 404 (never another service's). */
    async get(service: ServiceRow, deployId: string): Promise<DeployRow> {
      const deploy = await repo.get(deployId);
      if (!deploy || deploy.serviceId !== service.id) throw notFound('deploy');
      return deploy;
    },
    /** Newest first. */
    list: (service: ServiceRow, q: Omit<DeployQuery, 'serviceId'>) => {
      const query = { ...q, serviceId: service.id };
      return deps.cache.get(cacheKey('deploys', query), ['deploys'], () => repo.list(query));
    },

    /** A deploy by request; `deploy_only` builds when nothing is live yet (there is no artifact to reuse). */
    async trigger(service: ServiceRow, opts: { commitId?: string; clearCache?: boolean; deployMode?: DeployMode }) {
      const live = opts.deployMode === 'deploy_only' ? await repo.liveOf(service) : undefined;
      if (live) return engine.trigger(service, { trigger: 'api', artifactOf: live });
      return engine.trigger(service, { trigger: 'api', commitId: opts.commitId, clearCache: opts.clearCache });
    },

    /**
     * Stores an uploaded archive (`archive` is opened once the service is known not to be going away) and,
     * by the service's autoDeploy rule (deploysNewSource), deploys it.
     */
    async uploadSource(
      service: ServiceRow,
      archive: () => Promise<Readable>,
    ): Promise<{ source: SourceRow; deploy?: DeployRow }> {
      const source = await engine.writingTo(service.id, async () => deps.saveUpload(service.id, await archive()));
      if (!deploysNewSource(service)) return { source };
      return { source, deploy: await engine.trigger(service, { trigger: 'new_commit', sourceId: source.id }) };
    },
    /** Deploys an archive already checked (a blueprint's) as the service's new source, whatever its autoDeploy. */
    async deployArchive(service: ServiceRow, archive: { file: string; sha256: string }): Promise<DeployRow> {
      const source = await engine.writingTo(service.id, () => deps.linkSource(service.id, archive));
      return engine.trigger(service, { trigger: 'new_commit', sourceId: source.id });
    },
  };
}
export type Deploys = ReturnType<typeof createDeploys>;
