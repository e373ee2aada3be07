import { run } from '../../lib/exec.js';
import type { Logger } from '../../lib/logger.js';
import type { DeployTriggerRepo } from '../../store/repos/deploy-triggers.js';
import { FINISHED, type DeployRepo } from '../../store/repos/deploys.js';
import type { ServiceRow } from '../../store/repos/services.js';
import { gitLsRemoteCommand } from './commands.js';
import type { DeployEngine } from './engine.js';

const LS_REMOTE_TIMEOUT_MS = 30_000;
/** Repos asked at once: a slow host holds one slot, not the round. */
const CONCURRENCY = 4;

/**
 * Deploys new commits of git services that have no push notification (no GitHub App): every `intervalMs`, each
 * service with autoDeploy on has its branch's head read by `git ls-remote` and, when it moved, that exact commit
 * deployed (trigger `new_commit`). The head is recorded compare-and-set (deploy-triggers.ts moveHead), so with
 * several Slipway processes a commit still starts one deploy.
 */
export function createGitPoller(deps: {
  repo: Pick<DeployTriggerRepo, 'pollable' | 'headOf' | 'moveHead'>;
  deploys: Pick<DeployRepo, 'list'>;
  services: { get(id: string): Promise<ServiceRow | undefined> };
  engine: Pick<DeployEngine, 'trigger'>;
  gitProtocols: string[];
  /** Whether the code host tells Slipway of this repo's pushes (the GitHub App): such services are not polled. */
  pushed?: (service: { workspaceId: string; repo: string | null }) => Promise<boolean>;
  log: Logger;
}) {
  const { repo } = deps;

  async function headCommit(service: { repo: string; branch: string | null }): Promise<string | undefined> {
    const cmd = gitLsRemoteCommand(service.repo, { branch: service.branch ?? undefined, protocols: deps.gitProtocols });
    const result = await run(cmd, { timeoutMs: LS_REMOTE_TIMEOUT_MS, maxOutputBytes: 64 * 1024 });
    if (result.exitCode !== 0) return undefined;
    // git matches the pattern against the end of every ref name (`a/refs/heads/main` too): take the exact one.
    const ref = service.branch ? `refs/heads/${service.branch}` : 'HEAD';
    for (const line of result.output.split('\n')) {
      const [commit, name] = line.trim().split('\t');
      if (name === ref && commit && /^[0-9a-f]{40,64}$/.test(commit)) return commit;
    }
    return undefined;
  }

  /** One service: true when a deploy was started. */
  async function check(s: { id: string; workspaceId: string; repo: string | null; branch: string | null }) {
    if (!s.repo || (await deps.pushed?.(s))) return false;
    const head = await headCommit({ repo: s.repo, branch: s.branch });
    if (!head) return false; // unreachable or no such branch: the next deploy says why, the poller stays quiet
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
    const service = await deps.services.get(s.id);
    if (!service) return false;
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

  /** One round over every pollable service; returns how many deploys it started. */
  async function pollOnce(): Promise<number> {
    const queue = await repo.pollable();
    let started = 0;
    const worker = async () => {
      for (let s = queue.shift(); s; s = queue.shift()) {
        try {
          if (await check(s)) started++;
        } catch (err) {
          deps.log.warn({ serviceId: s.id, err: (err as Error).message }, 'git poll failed');
        }
      }
    };
    await Promise.all(Array.from({ length: CONCURRENCY }, worker));
    return started;
  }

  let timer: NodeJS.Timeout | undefined;
  let round: Promise<unknown> = Promise.resolve();
  let stopped = false;
  return {
    pollOnce,
    /** Polls every `intervalMs` (0: never), one round at a time. */
    start(intervalMs: number) {
      if (intervalMs <= 0) return;
      const next = () => {
        if (stopped) return;
        timer = setTimeout(() => {
          round = pollOnce().finally(next);
        }, intervalMs);
        timer.unref();
      };
      next();
    },
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await round.catch(() => undefined);
    },
  };
}
export type GitPoller = ReturnType<typeof createGitPoller>;
