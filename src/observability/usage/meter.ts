import { randomUUID } from 'node:crypto';
import { createSerial } from '../../lib/keyed-locks.js';
import type { LastStretch, UsageInsert, UsageRepo } from '../../store/repos/usage.js';
import { createTrafficCounter } from '../metrics/sampler.js';
import type { Logger } from '../../lib/logger.js';

export interface MeterDeps {
  repo: Pick<
    UsageRepo,
    | 'append'
    | 'lastStretches'
    | 'meterableInstances'
    | 'meterableDatastores'
    | 'meterableBuilds'
    | 'serviceWorkspaces'
    | 'rollUp'
  >;
  /** Whether an instance's process is alive (the runtime's check, guarded against pid reuse). */
  isAlive(process: { pid: number; startTime: string }): boolean;
  intervalMs: number;
  log: Pick<Logger, 'warn'>;
  now?: () => Date;
}

const ACTIVE = new Set(['starting', 'running']);
/**
 * Each pass rolls the ledger's new entries into hours, 20,000 at a time (store/repos/usage-rollups.ts), those at least a minute old:
 * a meter pass's transaction lasts well under that, so no entry commits behind the roll-up's mark.
 */
const ROLLUP = { maxRows: 20_000, lagSeconds: 60 };
const seconds = (from: Date, to: Date) => (to.getTime() - from.getTime()) / 1000;
const later = (a: Date, b: Date) => (a > b ? a : b);
const earlier = (a: Date, b: Date) => (a < b ? a : b);
/** A zero-length entry at `at`: the source's time after it is not billed (see LastStretch.closed). */
const closing = (base: Omit<UsageInsert, 'quantity' | 'startedAt' | 'endedAt'>, at: Date): UsageInsert => ({
  ...base,
  quantity: 0,
  startedAt: at,
  endedAt: at,
});

/**
 * The usage meter: appends to the ledger, each tick, every source's stretch from where its
 * previous stretch ended (read back from the ledger, never from memory) to now or to its stop.
 * A tick repeated, or run by two processes at once, adds nothing: the ledger is unique on
 * (source, kind, start) and a conflicting insert is a no-op.
 *
 * - Instances: billed from their process start until Slipway stops them (`stopped_at`), crash
 *   restarts included. An instance found dead at boot (it died while Slipway was down, at an
 *   unknown time) is closed at the last time the meter saw it alive, before recovery stamps it
 *   stopped "now"; one that kept running is billed through the downtime.
 * - Datastores: billed while not suspended, from creation; a suspension closes them at the
 *   suspension (the row's `updated_at`), a resume reopens them from the resume.
 * - Builds: billed as they run, each tick, and up to their end when they finish; a build cut off
 *   by a crash is billed up to the last tick before it.
 * - Bandwidth: the router's response bytes per service, counted in memory and flushed each tick
 *   (per process: see meterId).
 */
export function createUsageMeter(deps: MeterDeps) {
  const { repo, log } = deps;
  const now = deps.now ?? (() => new Date());
  const traffic = createTrafficCounter();
  // Each process counts its own router's bytes: its bandwidth entries are a source of their own
  // (`<serviceId>:<meter id>`), so two processes flushing at once never collide on the ledger key.
  const meterId = randomUUID().slice(0, 8);
  const meterStartedAt = now();
  let timer: NodeJS.Timeout | undefined;
  /** Ticks never overlap within a process. */
  const serial = createSerial();

  async function meterInstances(at: Date): Promise<UsageInsert[]> {
    const out: UsageInsert[] = [];
    for (const row of await repo.meterableInstances()) {
      const base = {
        workspaceId: row.workspaceId,
        resourceId: row.serviceId,
        sourceId: row.id,
        kind: 'instance_seconds' as const,
        plan: row.plan,
      };
      const last = row.last;
      // Closed since this process started: nothing more to bill for this life.
      if (last?.closed && last.endedAt >= row.startedAt) continue;
      const from = !last ? row.startedAt : last.closed ? row.startedAt : last.endedAt;
      let to: Date;
      if (ACTIVE.has(row.status)) {
        // A dead process of a row still marked running: the supervisor restarts it (same id) or
        // marks it failed; billing goes on from the last stretch once it has, so skip it now.
        if (!row.pid || !deps.isAlive({ pid: row.pid, startTime: row.startTime ?? '' })) continue;
        to = at;
      } else {
        to = earlier(row.stoppedAt ?? at, at);
      }
      if (to > from) out.push({ ...base, quantity: seconds(from, to), startedAt: from, endedAt: to });
    }
    return out;
  }

  async function meterDatastores(at: Date): Promise<UsageInsert[]> {
    const out: UsageInsert[] = [];
    for (const d of await repo.meterableDatastores()) {
      const base = {
        workspaceId: d.workspaceId,
        resourceId: d.id,
        sourceId: d.id,
        kind: 'datastore_seconds' as const,
        plan: d.plan,
      };
      const last: LastStretch | undefined = d.last;
      if (d.suspended) {
        if (last?.closed) continue;
        const from = last?.endedAt ?? d.createdAt;
        const to = later(from, earlier(d.updatedAt, at)); // suspended at (about) its last update
        if (to > from) out.push({ ...base, quantity: seconds(from, to), startedAt: from, endedAt: to });
        out.push(closing(base, to));
        continue;
      }
      let from = last?.endedAt ?? d.createdAt;
      if (last?.closed) {
        if (d.updatedAt <= last.endedAt) continue; // not touched since it was suspended
        from = d.updatedAt; // resumed then
      }
      if (at > from) out.push({ ...base, quantity: seconds(from, at), startedAt: from, endedAt: at });
    }
    return out;
  }

  async function meterBuilds(at: Date): Promise<UsageInsert[]> {
    return (await repo.meterableBuilds()).flatMap((b) => {
      if (b.last?.closed) return []; // ended; its deploy just has not moved on yet
      const from = b.last?.endedAt ?? b.startedAt;
      return at > from
        ? [
            {
              workspaceId: b.workspaceId,
              resourceId: b.serviceId,
              sourceId: b.id,
              kind: 'build_seconds' as const,
              plan: b.plan,
              quantity: seconds(from, at),
              startedAt: from,
              endedAt: at,
            },
          ]
        : [];
    });
  }

  async function meterBandwidth(
    at: Date,
    counts: Map<string, { requests: number; bytes: number }>,
  ): Promise<UsageInsert[]> {
    const ids = [...counts.keys()];
    if (ids.length === 0) return [];
    const sourceOf = (serviceId: string) => `${serviceId}:${meterId}`;
    const [owners, lasts] = await Promise.all([
      repo.serviceWorkspaces(ids),
      repo.lastStretches('bandwidth_bytes', ids.map(sourceOf)),
    ]);
    const out: UsageInsert[] = [];
    for (const [serviceId, { bytes }] of counts) {
      const owner = owners.get(serviceId);
      if (!owner || bytes <= 0) continue; // a deleted service's last bytes have no one to bill
      const sourceId = sourceOf(serviceId);
      const from = lasts.get(sourceId)?.endedAt ?? later(meterStartedAt, owner.createdAt);
      if (at > from)
        out.push({
          workspaceId: owner.workspaceId,
          resourceId: serviceId,
          sourceId,
          kind: 'bandwidth_bytes',
          plan: owner.plan,
          quantity: bytes,
          startedAt: from,
          endedAt: at,
        });
    }
    return out;
  }

  /** Rolls the ledger up into hours, in batches until it has caught up; one run at a time, beside the metering. */
  let rolling: Promise<void> | undefined;
  function rollUp(): Promise<void> {
    rolling ??= (async () => {
      try {
        while ((await repo.rollUp(ROLLUP)) >= ROLLUP.maxRows);
      } catch (err) {
        log.warn({ err: (err as Error).message }, 'usage meter: roll-up failed; retrying next tick');
      } finally {
        rolling = undefined;
      }
    })();
    return rolling;
  }

  /** One metering pass at `at` (default now); returns how many entries were new. */
  function tick(at: Date = now()): Promise<number> {
    void rollUp();
    return serial(async () => {
      const counts = traffic.drain();
      try {
        const rows = [
          ...(await meterInstances(at)),
          ...(await meterDatastores(at)),
          ...(await meterBuilds(at)),
          ...(await meterBandwidth(at, counts)),
        ];
        return await repo.append(rows);
      } catch (err) {
        for (const [serviceId, c] of counts) traffic.record(serviceId, c.bytes); // counted again next tick
        throw err;
      }
    });
  }

  const safeTick = () =>
    tick().catch((err: Error) => log.warn({ err: err.message }, 'usage meter: tick failed; retrying next tick'));

  return {
    /** The router reports each proxied request's response bytes here. */
    traffic,
    tick,
    /** A tick that never throws (failures are logged): before a deletion takes the rows it meters. */
    flush: safeTick,
    /**
     * At boot, before the deploy engine's recovery: instances whose process died while Slipway
     * was down get a closing entry at the last time the meter saw them alive (their last
     * stretch's end, or their start), so recovery stamping them stopped "now" bills nothing more.
     */
    closeDead(): Promise<number> {
      return serial(async () => {
        const rows: UsageInsert[] = [];
        for (const row of await repo.meterableInstances()) {
          if (!ACTIVE.has(row.status)) continue;
          if (row.pid && deps.isAlive({ pid: row.pid, startTime: row.startTime ?? '' })) continue;
          if (row.last?.closed && row.last.endedAt >= row.startedAt) continue;
          const base = {
            workspaceId: row.workspaceId,
            resourceId: row.serviceId,
            sourceId: row.id,
            kind: 'instance_seconds' as const,
            plan: row.plan,
          };
          rows.push(closing(base, row.last ? later(row.last.endedAt, row.startedAt) : row.startedAt));
        }
        return repo.append(rows);
      });
    },
    /** A finished build: billed from its last stretch to its end, then closed; never throws (the deploy must not fail for it). */
    async recordBuild(
      service: { id: string; workspaceId: string; details: { plan?: string } },
      deployId: string,
      startedAt: Date,
      endedAt: Date,
    ): Promise<void> {
      const plan = service.details.plan ?? 'starter';
      const base = {
        workspaceId: service.workspaceId,
        resourceId: service.id,
        sourceId: deployId,
        kind: 'build_seconds' as const,
        plan,
      };
      await serial(async () => {
        const from = (await repo.lastStretches('build_seconds', [deployId])).get(deployId)?.endedAt ?? startedAt;
        const to = later(from, endedAt);
        await repo.append([
          ...(to > from ? [{ ...base, quantity: seconds(from, to), startedAt: from, endedAt: to }] : []),
          closing(base, to),
        ]);
      }).catch((err: Error) => log.warn({ err: err.message, deployId }, 'usage meter: could not record a build'));
    },
    /** Meters once now, then every interval. */
    async start() {
      await safeTick();
      const loop = () => {
        timer = setTimeout(() => void safeTick().finally(() => timer && loop()), deps.intervalMs);
        timer.unref();
      };
      loop();
    },
    /** Stops the loop and meters a last time (a graceful stop loses no bandwidth and bills up to now). */
    async stop() {
      clearTimeout(timer);
      timer = undefined;
      await safeTick();
      await rolling;
    },
  };
}
export type UsageMeter = ReturnType<typeof createUsageMeter>;
