import type { Logger } from '../../lib/logger.js';

/** A claimed outbox row: whose it is, where it goes, and how many sends that target may have at once. */
export interface Claimed {
  workspaceId: string;
  /** A webhook, or a workspace's notification channel. */
  target: string;
  perTarget: number;
}
/** What a claim may take: `limit` rows, with this process's sends under way counted against the limits. */
export interface FairClaim {
  limit: number;
  busyTargets: ReadonlyMap<string, number>;
  busyWorkspaces: ReadonlyMap<string, number>;
}
export interface FairSettings {
  /** Sends at once in this process, and per workspace (its share of them). */
  concurrency: number;
  concurrencyPerWorkspace: number;
  /** How often the outbox is polled for due rows (retries; a new row wakes it at once). */
  pollMs: number;
}

/** The delay before retry `n` (n = attempts made): base·2^(n−1), at most 240·base, ±20 % jitter. */
export function retryDelayMs(attempts: number, baseMs: number, random = Math.random): number {
  const plain = Math.min(baseMs * 2 ** Math.max(0, attempts - 1), baseMs * 240);
  return Math.round(plain * (0.8 + 0.4 * random()));
}

/** After an attempt: done, given up (past the retry window), or due again after the backoff. */
export function retryOutcome(
  ok: boolean,
  attemptsBefore: number,
  createdAt: Date,
  settings: { retryBaseMs: number; retryWindowMs: number },
  now = new Date(),
): { status: 'succeeded' | 'failed' } | { status: 'pending'; nextAttemptAt: Date } {
  if (ok) return { status: 'succeeded' };
  const delay = retryDelayMs(attemptsBefore + 1, settings.retryBaseMs);
  if (now.getTime() + delay - createdAt.getTime() > settings.retryWindowMs) return { status: 'failed' };
  return { status: 'pending', nextAttemptAt: new Date(now.getTime() + delay) };
}

function count(counts: Map<string, number>, key: string, by: number) {
  const n = (counts.get(key) ?? 0) + by;
  if (n > 0) counts.set(key, n);
  else counts.delete(key);
}

/**
 * The outboxes' sending loop (webhooks', notifications'): claims due rows (the store takes turns between workspaces,
 * within the per-process, per-workspace and per-target limits given the sends under way here), sends each off the
 * request path, and claims again when a send frees a slot that held rows back. A slow target holds only its own
 * slots: other workspaces' rows go out beside it.
 */
export function createFairDispatcher<D extends Claimed>(deps: {
  what: string;
  claim: (q: FairClaim) => Promise<D[]>;
  deliver: (d: D) => Promise<void>;
  settings: FairSettings;
  log: Logger;
  /** At start, before the first claim: hands back the leases a killed predecessor left (the sole process only). */
  releaseAll?: () => Promise<void>;
}) {
  const { settings, log } = deps;
  const busyTargets = new Map<string, number>();
  const busyWorkspaces = new Map<string, number>();
  let inFlight = 0;
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  let passing: Promise<void> | undefined;
  let again = false;
  /** The last pass filled every slot: a finished send looks again. */
  let full = false;
  const sends = new Set<Promise<void>>();

  /** Claims what the limits allow until no room or nothing more comes. */
  async function pass() {
    for (;;) {
      const room = settings.concurrency - inFlight;
      full = room <= 0;
      if (stopped || full) return;
      const claimed = await deps.claim({ limit: room, busyTargets, busyWorkspaces });
      for (const d of claimed) start(d);
      full = claimed.length >= room;
      if (!full) return;
    }
  }

  function poke() {
    if (stopped) return;
    if (passing) {
      again = true;
      return;
    }
    passing = pass()
      .catch((err: unknown) => log.error({ err }, `${deps.what} dispatcher pass failed`))
      .finally(() => {
        passing = undefined;
        if (again) {
          again = false;
          poke();
        }
      });
  }

  function start(d: D) {
    inFlight++;
    count(busyTargets, d.target, 1);
    count(busyWorkspaces, d.workspaceId, 1);
    const sending = deps
      .deliver(d)
      .catch((err: unknown) => log.error({ err, target: d.target }, `${deps.what} delivery failed`))
      .finally(() => {
        // Rows may have been held back by a limit this send counted against: they may go now. Otherwise new rows
        // poke, and the poll finds retries.
        const limited =
          full ||
          (busyTargets.get(d.target) ?? 0) >= d.perTarget ||
          (busyWorkspaces.get(d.workspaceId) ?? 0) >= settings.concurrencyPerWorkspace;
        inFlight--;
        count(busyTargets, d.target, -1);
        count(busyWorkspaces, d.workspaceId, -1);
        sends.delete(sending);
        if (limited) poke();
      });
    sends.add(sending);
  }

  return {
    poke,
    async start() {
      await deps.releaseAll?.();
      timer = setInterval(poke, settings.pollMs);
      timer.unref();
      poke();
    },
    /** Stops claiming and waits for the sends under way (each ends within its timeout). */
    async stop() {
      stopped = true;
      clearInterval(timer);
      await passing;
      await Promise.all([...sends]);
    },
  };
}
