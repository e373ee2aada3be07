import { setMaxListeners } from 'node:events';
import { createFairSlots } from '../../lib/fair-slots.js';
import type { Logger } from '../../lib/logger.js';
import type { DeployTriggerRepo } from '../../store/repos/deploy-triggers.js';
import { FINISHED, type DeployRepo } from '../../store/repos/deploys.js';
import type { ServiceRow } from '../../store/repos/services.js';
import type { DeployEngine } from './engine.js';
import type { Git } from '../builds/git.js';

/** Repos asked at once, and of one workspace at once: a slow host holds a slot of its own workspace's, not the poller. */
const CONCURRENCY = 4;
const PER_WORKSPACE = 2;
/** A repo whose poll failed is asked again after 2, 4, … up to 32 intervals. */
const MAX_BACKOFF_EXPONENT = 5;

type Pollable = { id: string; workspaceId: string; repo: string | null; branch: string | null };

/**
 * Deploys new commits of git services that have no push notification (no GitHub App): every `intervalMs`, each
 * service with autoDeploy on has its branch's head read by `git ls-remote` (sandboxed, git.ts) and, when it moved,
 * that exact commit deployed (trigger `new_commit`). The head is recorded compare-and-set (deploy-triggers.ts
 * moveHead), so with several Slipway processes a commit still starts one deploy.
 *
 * Fair between workspaces: polls are shared round robin by workspace (lib/fair-slots.ts), a service still being
 * polled is not asked again, and a repo that fails is asked less and less often, so one workspace's dead or hanging
 * repos delay another's poll by at most one git timeout.
 */
export function createGitPoller(deps: {
  repo: Pick<DeployTriggerRepo, 'pollable' | 'headOf' | 'moveHead'>;
  deploys: Pick<DeployRepo, 'list'>;
  services: { get(id: string): Promise<ServiceRow | undefined> };
  engine: Pick<DeployEngine, 'trigger'>;
  git: Pick<Git, 'lsRemote'>;
  /** Whether the code host tells Slipway of this repo's pushes (the GitHub App): such services are not polled. */
  pushed?: (service: { workspaceId: string; repo: string | null }) => Promise<boolean>;
  log: Logger;
}) {
  const { repo } = deps;
  const slots = createFairSlots({ slots: CONCURRENCY, perKey: PER_WORKSPACE });
  /** Services being polled now; and those that failed: how often in a row, and the round before which they wait. */
  const inFlight = new Set<string>();
  const failing = new Map<string, { failures: number; skipUntilRound: number }>();
  let round = 0;
  /** Aborted on stop: a poll under way ends at once rather than at its timeout. */
  const stopping = new AbortController();
  // Every poll waiting or running listens to it (one per service due): not a leak.
  setMaxListeners(0, stopping.signal);

  /** One service: true when a deploy was started. */
  async function check(s: Pollable) {
    if (!s.repo || (await deps.pushed?.(s))) return false;
    const head = await deps.git.lsRemote({ repo: s.repo, branch: s.branch ?? undefined, signal: stopping.signal });
    // ls-remote takes a while: a user who turned autoDeploy off, suspended the service or moved its branch meanwhile
    // must not get a deploy of what was asked before, nor a head recorded that the next turn-on would skip.
    const service = await deps.services.get(s.id);
    if (!service || !stillPollable(service, s)) return false;
    const source = `${s.repo}#${s.branch ?? ''}`;
    const seen = await repo.headOf(s.id);
    let known = seen?.source === source ? seen.commitId : undefined;
    if (!known) {
      // No record for this repo and branch yet: what the newest deploy built counts as seen. A deploy still
      // cloning has no commit yet; ask again next round rather than deploy the same commit twice.
      const [newest] = await deps.deploys.list({ serviceId: s.id, limit: 1 });
      if (newest && !FINISHED.includes(newest.status)) return false;
      known = newest?.commitId ?? undefined;
    }
    if (known === head) {
      if (!seen || seen.source !== source) await repo.moveHead(s.id, seen, { source, commitId: head });
      return false;
    }
    if (!(await repo.moveHead(s.id, seen, { source, commitId: head }))) return false; // another process took it
    try {
      await deps.engine.trigger(service, { trigger: 'new_commit', commitId: head });
    } catch (err) {
      // Not deployed: put the record back, so the next round tries this commit again.
      const moved = await repo.headOf(s.id);
      if (moved) await repo.moveHead(s.id, moved, { source: seen?.source ?? source, commitId: known ?? '' });
      throw err;
    }
    return true;
  }

  /** Polls `s` in its workspace's turn; records how it went. */
  async function pollOne(s: Pollable): Promise<boolean> {
    inFlight.add(s.id);
    const release = await slots.acquire(s.workspaceId, { signal: stopping.signal }).catch(() => undefined);
    if (!release) {
      inFlight.delete(s.id);
      return false;
    }
    try {
      const started = await check(s);
      failing.delete(s.id);
      return started;
    } catch (err) {
      if (stopping.signal.aborted) return false;
      // Unreachable or no such branch: the next deploy says why; the poller notes it and asks less often.
      const failures = (failing.get(s.id)?.failures ?? 0) + 1;
      failing.set(s.id, { failures, skipUntilRound: round + 2 ** Math.min(failures, MAX_BACKOFF_EXPONENT) - 1 });
      deps.log.warn({ serviceId: s.id, failures, err: (err as Error).message }, 'git poll failed');
      return false;
    } finally {
      release();
      inFlight.delete(s.id);
    }
  }

  /**
   * Starts a round: every pollable service not being polled and not backing off. Resolves with how many deploys the
   * round started once all of its polls ended (rounds overlap: the next one does not wait for a slow repo).
   */
  async function pollOnce(): Promise<number> {
    round++;
    const all = await repo.pollable();
    const live = new Set(all.map((s) => s.id));
    for (const id of failing.keys()) if (!live.has(id)) failing.delete(id);
    const due = all.filter((s) => !inFlight.has(s.id) && (failing.get(s.id)?.skipUntilRound ?? 0) < round);
    const started = await Promise.all(due.map(pollOne));
    return started.filter(Boolean).length;
  }

  let timer: NodeJS.Timeout | undefined;
  const rounds = new Set<Promise<unknown>>();
  let stopped = false;
  return {
    pollOnce,
    /** Polls every `intervalMs` (0: never). */
    start(intervalMs: number) {
      if (intervalMs <= 0) return;
      timer = setInterval(() => {
        if (stopped) return;
        const r = pollOnce().catch((err: Error) => deps.log.warn({ err: err.message }, 'git poll round failed'));
        rounds.add(r);
        void r.finally(() => rounds.delete(r));
      }, intervalMs);
      timer.unref();
    },
    async stop() {
      stopped = true;
      clearInterval(timer);
      stopping.abort();
      await Promise.all(rounds);
    },
  };
}
/** The service as it is now still asks to be polled for what `asked` polled (see deploy-triggers.ts pollable). */
function stillPollable(service: ServiceRow, asked: Pollable) {
  return (
    service.autoDeploy === 'yes' &&
    !service.suspenders.includes('user') &&
    service.repo === asked.repo &&
    service.branch === asked.branch
  );
}

export type GitPoller = ReturnType<typeof createGitPoller>;
