import { IN_PROGRESS, PENDING } from '../../store/repos/deploys.js';
import type { Repos } from '../../store/repos/index.js';
import type { Layout } from './layout.js';
import type { Trash } from './trash.js';

/**
 * Keeps a service's disk bounded: artifacts beyond the newest `keep` (never the live one's, nor
 * one a queued rollback will start) and uploaded archives beyond the newest `keep` are deleted.
 */
export function createGarbageCollector(deps: {
  repos: Pick<Repos, 'services' | 'deploys'>;
  layout: Layout;
  trash: Trash;
  keep: number;
}) {
  const { repos, layout } = deps;
  return async function collectGarbage(serviceId: string) {
    const service = await repos.services.get(serviceId);
    if (!service) return;
    const live = await repos.deploys.liveOf(service);
    const upcoming = await repos.deploys.inStatus([...PENDING, ...IN_PROGRESS], serviceId);
    const needed = [
      ...(live ? [live.artifactOf ?? live.id] : []),
      ...upcoming.flatMap((d) => (d.artifactOf ? [d.artifactOf] : [])),
    ];
    const keep = [...new Set(needed)];
    const owners = (await repos.deploys.withArtifacts(serviceId, keep)).filter(
      (d) => !d.artifactOf && !PENDING.includes(d.status) && !IN_PROGRESS.includes(d.status),
    );
    for (const old of owners.slice(Math.max(0, deps.keep - keep.length))) {
      deps.trash.discard(layout.artifactDir(serviceId, old.id));
      await repos.deploys.update(old.id, { artifactDeleted: true });
    }
    for (const source of (await repos.deploys.listSources(serviceId)).slice(deps.keep)) {
      deps.trash.discard(layout.sourceFile(serviceId, source.id));
      await repos.deploys.deleteSource(source.id);
    }
  };
}
