import { setTimeout as sleep } from 'node:timers/promises';
import type { Release } from '../../lib/fair-slots.js';
import type { Logger } from '../../lib/logger.js';
import type { SyslogConnect, SyslogConnection } from '../../integrations/syslog-sender.js';
import { frame, syslogMessage } from '../../integrations/syslog.js';
import type { ForwardRow, LogStreamRepo } from '../../store/repos/log-streams.js';

/** An entry as the log hub hands it over: what a frame needs, and whose it is. */
export type LiveRow = ForwardRow & { workspaceId: string };

/** New entries the hub handed over, not yet sent: every entry of the stream's scope with an id in (from, to]. */
interface Handed {
  from: number;
  to: number;
  rows: LiveRow[];
}

/** One stream as the forwarder runs it: where to, with what token, what it reads and skips, and its cursor. */
export interface StreamSpec {
  /** `owner:<workspace id>` or `override:<override id>`. */
  key: string;
  workspaceId: string;
  /** The workspace's logs (its setting), or one resource's (an override). */
  scope: { workspaceId: string } | { resourceId: string };
  endpoint: string;
  token?: string;
  /** Resources whose entries this stream skips (the workspace's overrides), and whether previews' entries go. */
  skip: Set<string>;
  previews: boolean;
  cursor: number;
  /** Changes when the stream is deleted and made again: a new cursor, a new runner. */
  version: number;
}

export interface RunnerDeps {
  repo: Pick<LogStreamRepo, 'forwardBatch' | 'servicesOf'>;
  connect: SyslogConnect;
  saveCursor(spec: StreamSpec, cursor: number): Promise<void>;
  /** A turn at the store and the event loop (fair between workspaces): held while a batch is read and formatted. */
  turn(workspaceId: string): Promise<Release>;
  log: Pick<Logger, 'info' | 'warn'>;
  settings: {
    /** Entries one read from the store takes at most; ten times this may wait in memory (handed over by the hub). */
    batch: number;
    pollMs: number;
    backoffMinMs: number;
    backoffMaxMs: number;
    /** Ids one read spans at most (forwardBatch). */
    span: number;
    /** The cursor is saved at most this often while a backlog is sent, and always when caught up or stopping. */
    saveMs: number;
  };
}

/**
 * One stream's loop: connect, read the entries after the cursor (a bounded batch), write them as one buffer, wait
 * until the socket took it (back-pressure: one batch in flight), move the cursor and save it. A caught-up stream takes
 * new entries from the log hub instead of reading them back from the store (offer()); a stream behind reads the
 * store until it has caught up with what the hub handed over. A failure closes the
 * connection and retries from the saved cursor after a backoff (doubling, with jitter, up to backoffMaxMs), so an
 * endpoint that is down gets the backlog once it is back. Every stream is its own loop: a slow or dead endpoint only
 * ever holds its own.
 */
export function startRunner(initial: StreamSpec, deps: RunnerDeps) {
  let spec = initial;
  let cursor = initial.cursor;
  let conn: SyslogConnection | undefined;
  let stopped = false;
  let wake: (() => void) | undefined;
  let woken = false;
  let failing = false;
  const stopSignal = new AbortController();

  const rest = (ms: number) =>
    new Promise<void>((resolve) => {
      if (woken || stopped) return resolve();
      const timer = setTimeout(done, ms);
      function done() {
        clearTimeout(timer);
        wake = undefined;
        resolve();
      }
      wake = done;
    });

  /** Services' names and preview flags, read once per service (frames name it; previews may be skipped). */
  let services = new Map<string, { name: string; preview: boolean } | null>();
  async function learn(rows: ForwardRow[]) {
    const unknown = [...new Set(rows.map((r) => r.resourceId))].filter((id) => !services.has(id));
    if (!unknown.length) return;
    const found = await deps.repo.servicesOf(unknown);
    for (const id of unknown) services.set(id, found.get(id) ?? null);
  }
  const keep = (row: ForwardRow) =>
    !spec.skip.has(row.resourceId) && (spec.previews || !services.get(row.resourceId)?.preview);
  const toFrame = (row: ForwardRow) =>
    frame(
      syslogMessage(
        {
          id: row.id,
          tsUs: row.tsUs,
          hostname: services.get(row.resourceId)?.name ?? row.resourceId,
          appName: row.resourceId,
          procId: row.instanceId ?? null,
          msgId: row.type,
          level: row.level,
          message: row.message,
        },
        spec.token,
      ),
    );

  /** Entries the hub handed over, not yet sent (contiguous, at most maxHanded rows). */
  const maxHanded = deps.settings.batch * 10;
  let handed: Handed | undefined;
  const inScope = (row: LiveRow) =>
    'workspaceId' in spec.scope ? row.workspaceId === spec.scope.workspaceId : row.resourceId === spec.scope.resourceId;
  /** The handed-over entries when they reach back to the cursor (nothing between is missing), else undefined. */
  function takeHanded(): { rows: ForwardRow[]; readTo: number } | undefined {
    const h = handed;
    if (!h || h.from > cursor) return undefined; // the store holds entries before them: read those first
    handed = undefined;
    if (h.to <= cursor) return undefined; // a read of the store went past them
    return { rows: h.rows.filter((r) => r.id > cursor), readTo: h.to };
  }

  let saved = cursor;
  let savedAt = 0;
  async function save(force: boolean) {
    if (cursor === saved || (!force && Date.now() - savedAt < deps.settings.saveMs)) return;
    const at = cursor;
    await deps.saveCursor(spec, at);
    saved = at;
    savedAt = Date.now();
  }

  /** One batch: false when there was nothing after the cursor. */
  async function step(): Promise<boolean> {
    if (!conn || conn.broken) {
      conn?.close();
      conn = await deps.connect(spec.endpoint);
      if (failing) deps.log.info({ stream: spec.key }, 'log stream: connected again');
    }
    const release = await deps.turn(spec.workspaceId);
    let data: Buffer;
    let readTo: number;
    let more = true;
    try {
      const fromHub = takeHanded();
      // After entries from the hub the stream is caught up: the hub wakes it for the next ones.
      if (fromHub) more = false;
      const batch =
        fromHub ?? (await deps.repo.forwardBatch(spec.scope, cursor, deps.settings.batch, deps.settings.span));
      readTo = batch.readTo;
      if (readTo === cursor) {
        await save(true); // caught up: the cursor is where a restart begins
        return false;
      }
      await learn(batch.rows);
      data = Buffer.from(batch.rows.filter(keep).map(toFrame).join(''), 'utf8');
    } finally {
      release();
    }
    if (data.length) await conn.write(data);
    cursor = readTo;
    await save(false);
    return more;
  }

  const done = (async () => {
    let backoff = deps.settings.backoffMinMs;
    while (!stopped) {
      woken = false;
      try {
        const more = await step();
        failing = false;
        backoff = deps.settings.backoffMinMs;
        if (!more) await rest(deps.settings.pollMs);
        else await new Promise<void>((resolve) => setImmediate(resolve)); // the loop back between batches
      } catch (err) {
        conn?.close();
        conn = undefined;
        if (!failing) deps.log.warn({ stream: spec.key, err: (err as Error).message }, 'log stream: endpoint failed');
        failing = true;
        const jittered = backoff * (0.8 + Math.random() * 0.4);
        await sleep(jittered, undefined, { signal: stopSignal.signal }).catch(() => undefined);
        backoff = Math.min(backoff * 2, deps.settings.backoffMaxMs);
      }
    }
    await save(true).catch((err) => deps.log.warn({ stream: spec.key, err }, 'log stream: saving the cursor failed'));
    conn?.close();
  })();

  return {
    get spec() {
      return spec;
    },
    /** New settings for the same stream (endpoint, token, what it skips); a new endpoint means a new connection. */
    update(next: StreamSpec) {
      if (next.endpoint !== spec.endpoint) {
        conn?.close();
        conn = undefined;
      }
      spec = { ...next, cursor };
      services = new Map(); // names are read again (a rename)
    },
    /**
     * Entries the hub handed over: `rows` are the workspace's entries with ids in (afterId, to], in id order. Kept
     * while they continue what was handed before; after a gap, or past maxHanded waiting, they start again from
     * these (the store has the ones before).
     */
    offer(rows: readonly LiveRow[], afterId: number, to: number) {
      const mine = rows.filter(inScope);
      if (handed && handed.to === afterId && handed.rows.length + mine.length <= maxHanded) {
        handed.to = to;
        for (const row of mine) handed.rows.push(row);
      } else {
        handed = mine.length <= maxHanded ? { from: afterId, to, rows: mine } : undefined;
      }
    },
    /** New entries may be there. */
    poke() {
      woken = true;
      wake?.();
    },
    /** Closes the connection: a batch under way fails (and is sent again from the cursor by the next start). */
    kill() {
      conn?.close();
    },
    /** Ends the loop once its batch under way is written and its cursor saved. */
    async stop() {
      stopped = true;
      stopSignal.abort();
      wake?.();
      await done;
    },
  };
}
export type Runner = ReturnType<typeof startRunner>;
