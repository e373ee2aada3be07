import { PortTakenError, type Placement, type Provisioner } from '../../provisioners/types.js';
import type { DatastoreRepo, DatastoreRow, DatastoreStatus } from '../../store/repos/datastores.js';
import type { ServiceEvent } from '../../model/events.js';
import { createKeyedLocks } from '../../lib/keyed-locks.js';
import type { Logger } from '../../lib/logger.js';

/** What the reconciler needs to act on one row: its provisioner and the spec it takes. */
export interface DatastoreDriver {
  provisioner(row: DatastoreRow): Provisioner<unknown> | undefined;
  spec(row: DatastoreRow): unknown;
}

export interface ReconcilerDeps {
  repo: Pick<DatastoreRepo, 'get' | 'all' | 'update'>;
  /** Updates the row and records `event` with it, in one transaction (the outbox). */
  updateWithEvent(id: string, patch: Partial<DatastoreRow>, event: ServiceEvent): Promise<DatastoreRow | undefined>;
  driver: DatastoreDriver;
  checkMs: number;
  /** Removes the network namespaces of local servers whose datastore `keep` refuses (deleted while Slipway was down). */
  sweepServers?(keep: (id: string) => boolean): Promise<void>;
  log: Logger;
}

const MAX_BACKOFF_MS = 60_000;
export const placementOf = (row: DatastoreRow): Placement | undefined =>
  row.host && row.port ? { host: row.host, port: row.port, state: row.provisionerState } : undefined;

/**
 * Converges every datastore on its row (desired state): creates what is `creating`, stops what is
 * suspended, starts what should serve, and restarts a datastore that stopped answering. Each step is
 * safe to re-run, so a control plane killed mid-way picks up where it was on its next pass.
 * Work on one datastore is serialised; a failing one is retried with backoff.
 */
export function createDatastoreReconciler(deps: ReconcilerDeps) {
  const { repo, driver, log } = deps;
  const withLock = createKeyedLocks();
  const failures = new Map<string, { count: number; retryAt: number }>();
  const restarts = new Set<string>();
  let timer: NodeJS.Timeout | undefined;
  let closed = false;

  async function setStatus(
    row: DatastoreRow,
    status: DatastoreStatus,
    type?: string,
    patch: Partial<DatastoreRow> = {},
  ) {
    if (!type || (status === row.status && type !== 'datastore_restarted'))
      return (await repo.update(row.id, { ...patch, status })) ?? row;
    const moved = patch.port !== undefined && patch.port !== row.port ? { port: patch.port } : {};
    const event = {
      workspaceId: row.workspaceId,
      datastoreId: row.id,
      type,
      details: { kind: row.kind, status, ...moved },
    };
    return (await deps.updateWithEvent(row.id, { ...patch, status }, event)) ?? row;
  }
  const placed = (p: Placement) => ({ host: p.host, port: p.port, provisionerState: p.state });

  /**
   * Runs a step that (re)starts the server. When its port was bound by someone else while it was down, the datastore
   * is unavailable for that reason (a `datastore_port_taken` event naming the port), and the provisioner serves it on
   * a new port, saved at once so that connection info, and services on their next deploy or restart, get the new one.
   */
  async function serving(
    row: DatastoreRow,
    provisioner: Provisioner<unknown>,
    spec: unknown,
    placement: Placement,
    step: () => Promise<Placement>,
  ): Promise<Placement> {
    try {
      return await step();
    } catch (err) {
      if (!(err instanceof PortTakenError) || !provisioner.relocate) throw err;
      log.warn(
        { datastoreId: row.id, port: err.port },
        'datastore port is taken by another process; moving it to a new port',
      );
      await deps.updateWithEvent(
        row.id,
        { status: 'unavailable' },
        {
          workspaceId: row.workspaceId,
          datastoreId: row.id,
          type: 'datastore_port_taken',
          details: { kind: row.kind, status: 'unavailable', port: err.port },
        },
      );
      const moved = await provisioner.relocate(spec, placement);
      await repo.update(row.id, placed(moved));
      return moved;
    }
  }

  async function converge(row: DatastoreRow) {
    const provisioner = driver.provisioner(row);
    if (!provisioner) {
      if (row.status !== 'unknown')
        log.warn({ datastoreId: row.id, provisioner: row.provisioner }, 'datastore provisioner is not configured here');
      return setStatus(row, 'unknown');
    }
    const spec = driver.spec(row);
    const placement = placementOf(row);
    if (row.suspended) {
      if (row.status === 'suspended') return row;
      if (placement) await provisioner.stop(spec, placement);
      return setStatus(row, 'suspended', 'datastore_suspended');
    }
    if (!placement || row.status === 'creating') {
      return setStatus(row, 'available', 'datastore_available', placed(await provisioner.create(spec)));
    }
    const start = () => serving(row, provisioner, spec, placement, () => provisioner.start(spec, placement));
    if (restarts.delete(row.id)) {
      await provisioner.stop(spec, placement);
      return setStatus(row, 'available', 'datastore_restarted', placed(await start()));
    }
    if (row.status === 'suspended') return setStatus(row, 'available', 'datastore_resumed', placed(await start()));
    if (row.status === 'config_restart') {
      return setStatus(
        row,
        'available',
        'datastore_updated',
        placed(await serving(row, provisioner, spec, placement, () => provisioner.update(spec, placement))),
      );
    }
    if (await provisioner.check(spec, placement))
      return row.status === 'available' ? row : setStatus(row, 'available', 'datastore_available');
    // Not answering: say so, then bring it back from its data.
    const down = row.status === 'unavailable' ? row : await setStatus(row, 'unavailable', 'datastore_unavailable');
    log.warn({ datastoreId: row.id }, 'datastore is not answering; restarting it');
    const started = await start();
    if (!(await provisioner.check(spec, started))) return repo.update(row.id, placed(started));
    return setStatus(down, 'available', 'datastore_available', placed(started));
  }

  /** Steps under way, so that close() lets them finish (and record where they put things). */
  const inflight = new Set<Promise<void>>();
  function reconcile(id: string, force = false): Promise<void> {
    const failed = failures.get(id);
    if (!force && failed && Date.now() < failed.retryAt) return Promise.resolve();
    const step = converge1(id);
    inflight.add(step);
    return step.finally(() => inflight.delete(step));
  }
  async function converge1(id: string) {
    await withLock(id, async () => {
      const row = await repo.get(id);
      if (!row || closed) return;
      try {
        await converge(row);
        failures.delete(id);
      } catch (err) {
        const count = (failures.get(id)?.count ?? 0) + 1;
        failures.set(id, { count, retryAt: Date.now() + Math.min(MAX_BACKOFF_MS, deps.checkMs * 2 ** (count - 1)) });
        log.error({ err, datastoreId: id, attempt: count }, 'datastore step failed; will retry');
        if (row.status === 'available')
          await setStatus(row, 'unavailable', 'datastore_unavailable').catch(() => undefined);
      }
    });
  }

  /** Running servers keep their namespaces (and addresses); those of datastores that no longer exist go. */
  async function sweep() {
    if (!deps.sweepServers) return;
    try {
      const ids = new Set((await repo.all()).map((row) => row.id));
      await deps.sweepServers((id) => ids.has(id));
    } catch (err) {
      log.error({ err }, 'could not sweep the namespaces of deleted datastores');
    }
  }

  async function pass() {
    try {
      for (const row of await repo.all()) await reconcile(row.id);
    } catch (err) {
      log.error({ err }, 'datastore reconciler pass failed (store unreachable?); will retry');
    }
  }

  return {
    /** Runs one pass now (re-adopting what runs, restarting what does not), then one every checkMs. */
    async start() {
      await sweep();
      await pass();
      const loop = async () => {
        await pass();
        if (!closed) timer = setTimeout(() => void loop(), deps.checkMs);
      };
      timer = setTimeout(() => void loop(), deps.checkMs);
    },
    /** Converges one datastore now (after an API change), in the background. */
    kick(id: string, opts: { restart?: boolean } = {}) {
      if (opts.restart) restarts.add(id);
      void reconcile(id, true);
    },
    /** Runs `work` while no step runs on that datastore (delete). */
    exclusive: <T>(id: string, work: () => Promise<T>) => withLock(id, work),
    async close() {
      closed = true;
      clearTimeout(timer);
      await Promise.allSettled([...inflight]);
    },
  };
}
export type DatastoreReconciler = ReturnType<typeof createDatastoreReconciler>;
