import { createFairSlots } from '../../lib/fair-slots.js';
import type { Logger } from '../../lib/logger.js';
import type { SecretBox } from '../../lib/secret-box.js';
import type { SyslogConnect } from '../../integrations/syslog-sender.js';
import type { LogStreamRepo } from '../../store/repos/log-streams.js';
import { startRunner, type LiveRow, type Runner, type RunnerDeps, type StreamSpec } from './runner.js';

export interface ForwarderDeps {
  repo: Pick<
    LogStreamRepo,
    'all' | 'pruneOrphans' | 'forwardBatch' | 'servicesOf' | 'saveOwnerCursor' | 'saveOverrideCursor'
  >;
  box: SecretBox;
  connect: SyslogConnect;
  /** New log entries, every one with an id in (afterId, last row's id] (the log hub's fan-out); returns the unsubscribe. */
  subscribe(onRows: (rows: LiveRow[], afterId: number) => void): () => void;
  log: Pick<Logger, 'info' | 'warn'>;
  settings: RunnerDeps['settings'] & {
    /** How often the streams are read again from the store (another process changed them). */
    refreshMs: number;
    /** How long stopping waits for batches under way before it gives up on them (they are sent again). */
    stopMs: number;
  };
}

/** Batches read and formatted at once in this process, and per workspace: the rest wait their turn. */
const TURNS = { slots: 2, perKey: 1 };

/**
 * Forwards every workspace's logs to its log streams (Render's log streams): one runner (runner.ts) per stream, the
 * workspace's setting and each `send` override, started, changed and stopped as the settings change. New entries go to
 * every runner (a caught-up one sends them without reading the store) and wake the runners of their workspace; a poll
 * finds what a wake-up missed.
 */
export function createLogStreamForwarder(deps: ForwarderDeps) {
  const runners = new Map<string, Runner>();
  const turns = createFairSlots(TURNS);
  let unsubscribe: (() => void) | undefined;
  let refreshTimer: NodeJS.Timeout | undefined;
  let loading: Promise<void> | undefined;
  let again = false;
  /** Not started, or stopped: nothing runs (another process of a shared Postgres forwards, see store/leader.ts). */
  let closed = true;

  const runnerDeps: RunnerDeps = {
    repo: deps.repo,
    connect: deps.connect,
    turn: (workspaceId) => turns.acquire(workspaceId),
    saveCursor: (spec, cursor) =>
      'resourceId' in spec.scope
        ? deps.repo.saveOverrideCursor(spec.key.slice('override:'.length), cursor)
        : deps.repo.saveOwnerCursor(spec.workspaceId, cursor),
    log: deps.log,
    settings: deps.settings,
  };

  /** The streams the store holds, as runners run them. */
  async function specs(): Promise<StreamSpec[]> {
    const { owners, overrides } = await deps.repo.all();
    const overridden = new Map<string, Set<string>>();
    for (const o of overrides) {
      const set = overridden.get(o.workspaceId) ?? new Set<string>();
      set.add(o.resourceId);
      overridden.set(o.workspaceId, set);
    }
    const open = (sealed: string | null) => (sealed ? deps.box.open(sealed) : undefined);
    const out: StreamSpec[] = [];
    for (const o of owners) {
      if (!o.endpoint) continue;
      out.push({
        key: `owner:${o.workspaceId}`,
        workspaceId: o.workspaceId,
        scope: { workspaceId: o.workspaceId },
        endpoint: o.endpoint,
        token: open(o.sealedToken),
        skip: overridden.get(o.workspaceId) ?? new Set(),
        previews: o.preview === 'send',
        cursor: o.cursor,
        version: o.createdAt.getTime(),
      });
    }
    for (const o of overrides) {
      if (o.setting !== 'send' || !o.endpoint) continue;
      out.push({
        key: `override:${o.id}`,
        workspaceId: o.workspaceId,
        scope: { resourceId: o.resourceId },
        endpoint: o.endpoint,
        token: open(o.sealedToken),
        skip: new Set(),
        previews: true,
        cursor: o.cursor,
        version: o.createdAt.getTime(),
      });
    }
    return out;
  }

  async function load() {
    await deps.repo.pruneOrphans();
    const next = new Map((await specs()).map((s) => [s.key, s]));
    const stopping: Promise<void>[] = [];
    for (const [key, runner] of runners) {
      const spec = next.get(key);
      if (spec && spec.version === runner.spec.version) {
        runner.update(spec);
        next.delete(key);
        continue;
      }
      runners.delete(key);
      stopping.push(runner.stop());
    }
    await Promise.all(stopping);
    if (closed) return;
    for (const [key, spec] of next) runners.set(key, startRunner(spec, runnerDeps));
    if (runners.size && !unsubscribe) unsubscribe = deps.subscribe(handOver);
    if (!runners.size && unsubscribe) {
      unsubscribe();
      unsubscribe = undefined;
    }
  }

  function handOver(rows: LiveRow[], afterId: number) {
    const byWorkspace = new Map<string, LiveRow[]>();
    for (const row of rows) {
      const list = byWorkspace.get(row.workspaceId);
      if (list) list.push(row);
      else byWorkspace.set(row.workspaceId, [row]);
    }
    const to = rows.at(-1)!.id;
    for (const runner of runners.values()) {
      const mine = byWorkspace.get(runner.spec.workspaceId);
      runner.offer(mine ?? [], afterId, to);
      if (mine) runner.poke();
    }
  }

  /** Reads the streams again (coalesced: a change during a load loads once more after it). */
  function reload(): Promise<void> {
    if (closed) return Promise.resolve();
    if (loading) {
      again = true;
      return loading;
    }
    loading = (async () => {
      do {
        again = false;
        await load().catch((err) => deps.log.warn({ err }, 'log streams: loading the settings failed'));
      } while (again && !closed);
    })().finally(() => {
      loading = undefined;
    });
    return loading;
  }

  return {
    reload,
    async start() {
      closed = false;
      await reload();
      refreshTimer = setInterval(() => void reload(), deps.settings.refreshMs);
      refreshTimer.unref();
    },
    /** Stops every runner once its batch under way is written (at most `stopMs`; an unfinished one is sent again). */
    async stop() {
      closed = true;
      clearInterval(refreshTimer);
      unsubscribe?.();
      await loading;
      const all = Promise.all([...runners.values()].map((r) => r.stop()));
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([all, new Promise((resolve) => (timer = setTimeout(resolve, deps.settings.stopMs)))]);
      clearTimeout(timer);
      for (const runner of runners.values()) runner.kill();
      runners.clear();
    },
  };
}
export type LogStreamForwarder = ReturnType<typeof createLogStreamForwarder>;
