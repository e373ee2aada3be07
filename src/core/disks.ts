import { rmSync } from 'node:fs';
import path from 'node:path';
import { AppError, badRequest, conflict, notFound } from '../lib/errors.js';
import { newId } from '../lib/ids.js';
import type { Logger } from '../lib/logger.js';
import { tickLoop } from '../lib/tick-loop.js';
import type { DiskPlace, ServiceDisks } from '../runtime/types.js';
import { isUniqueViolation } from '../store/db.js';
import type { DiskQuery, DiskRow } from '../store/repos/disks.js';
import type { Repos } from '../store/repos/index.js';
import type { ServiceRow } from '../store/repos/services.js';
import type { Events } from './events.js';
import type { Layout } from './service-state/layout.js';

const DAY_MS = 24 * 3_600_000;
/** Snapshots are kept this long (Render keeps a disk's daily snapshots for 7 days). */
const KEEP_SNAPSHOTS_MS = 7 * DAY_MS;
/** Snapshots taken by request kept per disk, newest first: each is a copy of up to the disk's size on the host. */
const KEEP_MANUAL = 3;
/** Service types that may have a disk (Render: web services, private services, background workers). */
const WITH_DISKS = new Set(['web_service', 'private_service', 'background_worker']);
/** Where the sandbox keeps the system's own dirs (bound read-only, or its own /proc, /dev, /tmp): no disk there. */
const RESERVED = new Set([
  'proc',
  'dev',
  'sys',
  'usr',
  'bin',
  'sbin',
  'lib',
  'lib32',
  'lib64',
  'libx32',
  'etc',
  'run',
  'tmp',
  'boot',
]);

export interface DiskInput {
  name: string;
  sizeGB: number;
  mountPath: string;
}

/** 400 unless `mountPath` is an absolute, normal path outside the system's dirs. */
export function checkMountPath(mountPath: string): string {
  const normal = path.posix.normalize(mountPath);
  const first = normal.split('/')[1] ?? '';
  const control = /[\u0000-\u001f\u007f]/.test(mountPath);
  // No ':' or ',': a container engine's bind syntax splits on them.
  const bad = control || /[:,]/.test(mountPath);
  if (bad || !mountPath.startsWith('/') || normal !== mountPath || mountPath === '/' || mountPath.endsWith('/'))
    throw badRequest(`mountPath must be an absolute path such as /var/data, got ${JSON.stringify(mountPath)}`);
  if (RESERVED.has(first))
    throw badRequest(`mountPath must not be in /${first}: the system's files are there (use a path such as /var/data)`);
  return mountPath;
}

/** What instances and snapshots do while a service's instances are stopped (engine.ts's control). */
export interface DiskControl {
  /** Stops every instance of the service, runs `work` with none running, then starts the live deploy's again. */
  withInstancesStopped(service: ServiceRow, work: () => Promise<void>): Promise<void>;
  /** Rolls its instances over (stopping the old first: it has a disk), so they bind the disk as it is now. */
  restart(service: ServiceRow): Promise<void>;
}

/**
 * Render's persistent disks (docs/deploys.md, "Disks"): one per service, mounted into its instances at `mountPath`,
 * kept across deploys; a service with one runs one instance, and its deploys stop the old before starting the new.
 * Snapshots: daily and on request, kept 7 days, restored with the service stopped.
 */
export function createDisks(deps: {
  repos: Pick<Repos, 'disks' | 'services'>;
  /** The runtime's, or why there are none (the 501's message). */
  disks: ServiceDisks | undefined;
  noDisks: string;
  layout: Layout;
  control: DiskControl;
  events: Pick<Events, 'record'>;
  checkMs: number;
  /** The largest disk, in GB (SLIPWAY_DISK_MAX_GB). */
  maxGb: number;
  log: Pick<Logger, 'info' | 'warn'>;
}) {
  const { repos, layout, control } = deps;
  const repo = repos.disks;
  const runtimeDisks = () => {
    if (!deps.disks) throw new AppError('not_configured', deps.noDisks);
    return deps.disks;
  };
  const placeOf = (disk: Pick<DiskRow, 'serviceId' | 'sizeGb'>): DiskPlace =>
    layout.diskPlace(disk.serviceId, disk.sizeGb);
  const snapshotFile = (disk: DiskRow, key: string) => path.join(layout.diskSnapshotsDir(disk.serviceId), `${key}.img`);
  const record = (disk: DiskRow, type: string, details: Record<string, unknown> = {}) =>
    deps.events.record({
      workspaceId: disk.workspaceId,
      serviceId: disk.serviceId,
      type,
      details: { diskId: disk.id, ...details },
    });
  const checkSize = (sizeGB: number) => {
    if (sizeGB > deps.maxGb)
      throw badRequest(`sizeGB may be at most ${deps.maxGb} on this machine (SLIPWAY_DISK_MAX_GB), got ${sizeGB}`);
  };
  /** Disks already said to be over their size (an uncapped disk's event is recorded once, not at every pass). */
  const overSize = new Set<string>();
  async function serviceOf(disk: DiskRow): Promise<ServiceRow> {
    const service = await repos.services.get(disk.serviceId);
    if (!service) throw notFound('service');
    return service;
  }
  /** Its instances pick the disk up (or lose it): now, when it has a live deploy and is not suspended. */
  async function applyTo(service: ServiceRow) {
    if (service.liveDeployId && !service.suspenders.includes('user')) await control.restart(service);
  }

  /** Undefined when the disk holds nothing yet: it is made when the service's instance first starts with it. */
  async function snapshot(disk: DiskRow, kind: 'daily' | 'manual') {
    const key = newId('diskSnapshot');
    const sizeBytes = await runtimeDisks().snapshot(placeOf(disk), snapshotFile(disk, key));
    return sizeBytes === undefined ? undefined : repo.addSnapshot({ id: key, diskId: disk.id, kind, sizeBytes });
  }

  /** The daily snapshot of each disk, the expiry of old ones, and (where sizes are not enforced) the usage check. */
  async function tick() {
    if (!deps.disks) return;
    for (const disk of await repo.all()) {
      const taken = await repo.snapshots(disk.id);
      const newestDaily = taken.find((s) => s.kind === 'daily');
      if (!newestDaily || Date.now() - newestDaily.createdAt.getTime() >= DAY_MS)
        await snapshot(disk, 'daily').catch((err: Error) =>
          deps.log.warn({ diskId: disk.id, err: err.message }, 'a daily disk snapshot failed'),
        );
      const old = taken.filter((s) => Date.now() - s.createdAt.getTime() > KEEP_SNAPSHOTS_MS);
      for (const s of old) rmSync(snapshotFile(disk, s.id), { force: true });
      await repo.deleteSnapshots(old.map((s) => s.id));
      const over = !deps.disks.capped && (await deps.disks.usedBytes(placeOf(disk))) > disk.sizeGb * 1024 ** 3;
      if (over && !overSize.has(disk.id)) await record(disk, 'disk_size_exceeded', { sizeGB: disk.sizeGb });
      if (over) overSize.add(disk.id);
      else overSize.delete(disk.id);
    }
  }
  const loop = tickLoop(tick, deps.checkMs, (err) => deps.log.warn({ err }, 'disks: a pass failed'));

  return {
    placeOf,
    /** 404 for an unknown id; the caller checks the workspace (http/guard.ts). */
    async get(id: string): Promise<DiskRow> {
      const disk = await repo.get(id);
      if (!disk) throw notFound('disk');
      return disk;
    },
    list: (q: DiskQuery) => repo.list(q),
    async create(workspaceId: string, input: DiskInput & { serviceId: string }): Promise<DiskRow> {
      runtimeDisks();
      checkSize(input.sizeGB);
      const service = await repos.services.get(input.serviceId);
      if (!service || service.workspaceId !== workspaceId) throw notFound('service');
      if (!WITH_DISKS.has(service.type))
        throw badRequest('only web services, private services and background workers can have a disk');
      if (service.details.numInstances > 1 || service.details.autoscaling?.enabled)
        throw conflict('a service with a disk runs one instance: scale it to 1 (and turn autoscaling off) first');
      const disk = await repo
        .insert({
          id: newId('disk'),
          workspaceId,
          serviceId: service.id,
          name: input.name,
          sizeGb: input.sizeGB,
          mountPath: checkMountPath(input.mountPath),
        })
        .catch((err: unknown) => {
          throw isUniqueViolation(err) ? conflict(`service ${service.id} has a disk already`) : err;
        });
      await record(disk, 'disk_created', { name: disk.name, sizeGB: disk.sizeGb, mountPath: disk.mountPath });
      await applyTo(service);
      return disk;
    },
    /** Name, a larger size, another mountPath; the instance is restarted for the last two (a disk never shrinks). */
    async update(disk: DiskRow, patch: Partial<DiskInput>): Promise<DiskRow> {
      if (patch.sizeGB !== undefined && patch.sizeGB < disk.sizeGb)
        throw badRequest(`a disk cannot shrink: sizeGB must be at least ${disk.sizeGb}`);
      if (patch.sizeGB !== undefined) checkSize(patch.sizeGB);
      if (patch.mountPath !== undefined) checkMountPath(patch.mountPath);
      const updated = await repo.update(disk.id, {
        ...(patch.name !== undefined ? { name: patch.name } : {}),
        ...(patch.sizeGB !== undefined ? { sizeGb: patch.sizeGB } : {}),
        ...(patch.mountPath !== undefined ? { mountPath: patch.mountPath } : {}),
      });
      if (!updated) throw notFound('disk');
      await record(updated, 'disk_updated', { sizeGB: updated.sizeGb, mountPath: updated.mountPath });
      const service = await serviceOf(updated);
      if (updated.sizeGb !== disk.sizeGb)
        // Grown offline: unmounted with the instance stopped; the next start grows and mounts it.
        await control.withInstancesStopped(service, () => runtimeDisks().unmount(placeOf(disk)));
      else if (updated.mountPath !== disk.mountPath) await applyTo(service);
      return updated;
    },
    /** Its files go with it (and its snapshots); the service runs on without it. */
    async remove(disk: DiskRow): Promise<void> {
      const service = await serviceOf(disk);
      await repo.delete(disk.id);
      await control.withInstancesStopped(service, async () => {
        await deps.disks?.remove(placeOf(disk));
        rmSync(layout.diskSnapshotsDir(disk.serviceId), { recursive: true, force: true });
      });
      await record(disk, 'disk_deleted');
    },
    /**
     * A blueprint's `disk` for the service: made, or renamed, grown or moved to it; what cannot be done (no disks here,
     * a smaller size, a service that cannot have one) comes back as warnings, and the service syncs without it.
     */
    async ensure(service: ServiceRow, want: DiskInput): Promise<string[]> {
      const have = await repo.ofService(service.id);
      try {
        if (!have) {
          await this.create(service.workspaceId, { ...want, serviceId: service.id });
          return [];
        }
        const shrink = want.sizeGB < have.sizeGb;
        const patch: Partial<DiskInput> = {
          ...(want.name !== have.name ? { name: want.name } : {}),
          ...(want.sizeGB > have.sizeGb ? { sizeGB: want.sizeGB } : {}),
          ...(want.mountPath !== have.mountPath ? { mountPath: want.mountPath } : {}),
        };
        if (Object.keys(patch).length) await this.update(have, patch);
        return shrink ? [`disk: a disk cannot shrink: it stays ${have.sizeGb} GB`] : [];
      } catch (err) {
        if (err instanceof AppError && err.statusCode < 500) return [`disk: ${err.message}`];
        throw err;
      }
    },
    snapshots: (disk: DiskRow) => repo.snapshots(disk.id),
    /** A snapshot now (Slipway's addition to Render's daily ones). */
    async snapshot(disk: DiskRow) {
      const taken = await snapshot(disk, 'manual');
      if (!taken) throw conflict("the disk holds nothing yet: it is made when the service's instance first starts");
      // A client looping on this keeps KEEP_MANUAL copies, not one per request (each is up to the disk's size).
      const older = (await repo.snapshots(disk.id)).filter((s) => s.kind === 'manual').slice(KEEP_MANUAL);
      for (const s of older) rmSync(snapshotFile(disk, s.id), { force: true });
      await repo.deleteSnapshots(older.map((s) => s.id));
      return taken;
    },
    /** Stops the service, puts the snapshot in the disk's place, starts it again. */
    async restore(disk: DiskRow, snapshotKey: string): Promise<DiskRow> {
      const taken = await repo.getSnapshot(disk.id, snapshotKey);
      if (!taken) throw notFound('snapshot');
      const service = await serviceOf(disk);
      await control.withInstancesStopped(service, () =>
        runtimeDisks().restore(placeOf(disk), snapshotFile(disk, taken.id)),
      );
      return disk;
    },
    start: () => loop.start(),
    stop: () => loop.stop(),
  };
}
export type Disks = ReturnType<typeof createDisks>;
