import { chmodSync, lstatSync, mkdirSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { TRAVERSE_ONLY } from '../../lib/paths.js';
import type { DiskPlace } from '../../runtime/types.js';
import type { DeployRow } from '../../store/repos/deploys.js';

const SERVICES = 'services';
/** Passed through by name, never listed, by the app user (src/runtime/local/host-paths.ts opens the rest of the way). */

/**
 * Without the sandbox, apps run as an unprivileged user and open their own files on the host, so the data dir is laid
 * out for it: the data dir and `services` are traversable only, everything else in it (the store, the secret key,
 * datastores, the lock) is closed to other users, whatever the umask made it. Within a service, `sources` (uploads) is
 * closed too; the runtime opens the dirs on the way to an instance's or a build's own dirs.
 */
function closeDataDir(dataDir: string): void {
  mkdirSync(path.join(dataDir, SERVICES), { recursive: true });
  chmodSync(dataDir, TRAVERSE_ONLY);
  for (const entry of readdirSync(dataDir)) {
    const file = path.join(dataDir, entry);
    const stat = lstatSync(file);
    if (stat.isSymbolicLink()) continue;
    chmodSync(file, entry === SERVICES ? TRAVERSE_ONLY : stat.mode & 0o7700);
  }
}

/** Where a service's files live under the data dir: sources, immutable artifacts, instance dirs. */
export function createLayout(dataDir: string) {
  closeDataDir(dataDir);
  const servicesDir = path.join(dataDir, SERVICES);
  const serviceDir = (serviceId: string) => path.join(servicesDir, serviceId);
  return {
    servicesDir,
    serviceDir,
    sourceFile: (serviceId: string, sourceId: string) =>
      path.join(serviceDir(serviceId), 'sources', `${sourceId}.archive`),
    /** A deploy's build output, kept read-only for rollback. */
    artifactDir: (serviceId: string, deployId: string) => path.join(serviceDir(serviceId), 'artifacts', deployId),
    /** The file holding the service's build disk (runtime's mountBuildDisk), and where it is mounted during a build. */
    /** The service's container storage: its images (one per deploy) and their layer cache (docs/containers.md). */
    containerStorage: (serviceId: string) => path.join(serviceDir(serviceId), 'containers'),
    /** The file holding that storage's disk (the runtime keeps it beside the storage: container-disks.ts). */
    containerDiskImage: (serviceId: string) => path.join(serviceDir(serviceId), 'containers.img'),
    buildDiskImage: (serviceId: string) => path.join(serviceDir(serviceId), 'build-disk.img'),
    /** Its persistent disk (core/disks.ts): the image and where it is mounted, and its snapshots (copies of the image). */
    diskSnapshotsDir: (serviceId: string) => path.join(serviceDir(serviceId), 'disk-snapshots'),
    diskPlace: (serviceId: string, sizeGb: number): DiskPlace => ({
      image: path.join(serviceDir(serviceId), 'disk.img'),
      dir: path.join(serviceDir(serviceId), 'disk'),
      sizeMb: sizeGb * 1024,
    }),
    buildDir: (serviceId: string) => path.join(serviceDir(serviceId), 'build'),
    /** The dependency cache kept between its builds (build-cache.ts), on the build disk. */
    cacheDir: (serviceId: string) => path.join(serviceDir(serviceId), 'build', 'cache'),
    /** Where the cache was before it moved to the build disk: removed at the service's next build. */
    legacyCacheDir: (serviceId: string) => path.join(serviceDir(serviceId), 'cache'),
    instanceDir: (serviceId: string, instanceId: string) => path.join(serviceDir(serviceId), 'instances', instanceId),
    /** Deleted files on their way out (trash.ts): on the data dir's disk, so moving them there is a rename. */
    trashDir: path.join(dataDir, 'trash'),
    /** Uploads being received and checked; whatever is here when Slipway starts is a crash's leftover. */
    uploadTmp: (serviceId: string) => path.join(serviceDir(serviceId), 'sources', '.incoming'),
  };
}
export type Layout = ReturnType<typeof createLayout>;

/** The deploy whose artifact `deploy` runs: its own, or the one a redeploy or rollback reuses. */
export const artifactOwner = (deploy: Pick<DeployRow, 'id' | 'artifactOf'>) => deploy.artifactOf ?? deploy.id;
