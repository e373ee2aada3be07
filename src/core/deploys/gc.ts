import { IN_PROGRESS, PENDING } from '../../store/repos/deploys.js';
import type { Repos } from '../../store/repos/index.js';
import type { Logger } from '../../lib/logger.js';
import { shareUnchangedFiles } from '../service-state/artifact-links.js';
import { serviceDiskBytes } from '../service-state/disk-usage.js';
import type { Layout } from '../service-state/layout.js';
import type { Trash } from '../service-state/trash.js';

/**
 * Keeps a service's disk bounded: artifacts beyond the newest `keep` (never the live one's, nor
 * one a queued rollback will start) and uploaded archives beyond the newest `keep` are deleted; then, while the
 * service takes more than `budgetBytes`, its older uploads and oldest kept artifacts too (docs/deploys.md, "Artifacts and disk").
 * A new live artifact first shares its unchanged files with the previous one (artifact-links.ts). What the service
 * takes then is recorded (usage and /status report it).
 */
export function createGarbageCollector(deps: {
  repos: Pick<Repos, 'services' | 'deploys'>;
  layout: Layout;
  trash: Trash;
  keep: number;
  budgetBytes: number;
  log?: Pick<Logger, 'warn'>;
  /** A container deploy's image goes with its artifact: the layers only it used are freed (docs/containers.md). */
  removeImage?(serviceId: string, deployId: string): Promise<void>;
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
    const discard = async (deployId: string) => {
      deps.trash.discard(layout.artifactDir(serviceId, deployId));
      if (service.details.docker || service.details.image) await deps.removeImage?.(serviceId, deployId);
      await repos.deploys.update(deployId, { artifactDeleted: true });
    };
    const kept = owners.slice(0, Math.max(0, deps.keep - keep.length));
    for (const old of owners.slice(kept.length)) await discard(old.id);
    // A queued or running deploy's upload stays: it runs alongside the next deploy's build (lifecycle.tidy).
    const building = new Set(upcoming.map((d) => d.sourceId));
    const sources = (await repos.deploys.listSources(serviceId)).filter((s) => !building.has(s.id));
    const dropSource = async (id: string) => {
      deps.trash.discard(layout.sourceFile(serviceId, id));
      await repos.deploys.deleteSource(id);
    };
    for (const source of sources.slice(deps.keep)) await dropSource(source.id);
    const keptSources = sources.slice(1, deps.keep); // the newest upload stays: a redeploy builds it again
    // After the deploy went live, off its critical path: the live artifact's files become links to the previous one's.
    // A container's deploy has an image, not an artifact dir (docs/containers.md, "Layer cache").
    if (live && !live.artifactOf && !live.toolchain?.image) {
      const notShared = await shareUnchangedFiles(layout.artifactDir(serviceId, live.id));
      if (notShared) deps.log?.warn({ serviceId, deployId: live.id }, `deploys: ${notShared}`);
    }
    let used = await serviceDiskBytes(layout, serviceId);
    // Newest first in both lists: the oldest go first, uploads (a rollback needs none) before artifacts, and never the
    // live artifact nor one a queued rollback waits for.
    while (used !== undefined && used > deps.budgetBytes && keptSources.length + kept.length > 0) {
      const source = keptSources.pop();
      if (source) await dropSource(source.id);
      else await discard(kept.pop()!.id);
      used = await serviceDiskBytes(layout, serviceId);
    }
    if (used !== undefined) await repos.services.setDiskBytes(serviceId, used);
  };
}
