import { badRequest, unauthorized } from '../../lib/errors.js';
import type { Logger } from '../../lib/logger.js';
import { hashToken } from '../../lib/tokens.js';
import type { DeployTriggerRepo } from '../../store/repos/deploy-triggers.js';
import type { GitHubRepo } from '../../store/repos/github.js';
import type { ServiceRow } from '../../store/repos/services.js';
import type { DeployEngine } from '../deploys/engine.js';
import type { Events } from '../events.js';
import { pushCounts } from './build-filter.js';
import { githubRepoKey, notConfigured, type GitHub } from './github.js';
import type { Previews, PullRequestPayload } from './previews.js';

interface PushPayload {
  ref?: string;
  after?: string;
  deleted?: boolean;
  installation?: { id?: number };
  repository?: {
    html_url?: string;
    clone_url?: string;
    default_branch?: string;
    /** When this push happened: Unix seconds in push events (an ISO string in other events). */
    pushed_at?: number | string;
  };
  commits?: Array<{ added?: string[]; modified?: string[]; removed?: string[] }>;
}
/**
 * How long delivery ids and bodies are remembered (jobs/maintenance.ts deletes them after): GitHub redelivers on
 * request, for days at most.
 */
export const DELIVERY_MEMORY_MS = 7 * 24 * 3_600_000;
/** A push made before the memory began: a replay of it could no longer be recognised, so none is taken. */
function pushedBeforeMemory(p: PushPayload, now = Date.now()): boolean {
  const at = p.repository?.pushed_at;
  const ms = typeof at === 'number' ? at * 1000 : typeof at === 'string' ? Date.parse(at) : NaN;
  return Number.isFinite(ms) && ms < now - DELIVERY_MEMORY_MS;
}

/** A delivery's headers: X-Hub-Signature-256, X-GitHub-Delivery, X-GitHub-Event. */
interface Headers {
  signature?: string;
  deliveryId?: string;
  event?: string;
}
const SIGNATURE = /^sha256=[0-9a-f]{64}$/i;
/** GitHub's are GUIDs; redelivery tools and GHES add nothing stranger. */
const DELIVERY_ID = /^[A-Za-z0-9._:-]{1,100}$/;
/** The events Slipway acts on (and `ping`, sent when the App's webhook is set up). */
const EVENTS = new Set(['push', 'pull_request', 'installation', 'installation_repositories', 'ping']);
interface InstallationPayload {
  action?: string;
  installation?: { id?: number; repository_selection?: string };
}

/**
 * GitHub's webhook (POST /v1/github/webhook): checked against the App's secret, each delivery handled once. A push
 * deploys that exact commit on every service of the installation's workspace on that repo and branch with autoDeploy
 * on, unless its buildFilter says the commit does not count (a `commit_ignored` event); installation events keep the
 * link true.
 */
export function createGitHubWebhook(deps: {
  github: GitHub;
  webUrl: string | undefined;
  verify: ((rawBody: string, signature: string) => Promise<boolean>) | undefined;
  repo: Pick<GitHubRepo, 'installation' | 'update' | 'unlink' | 'firstDelivery' | 'forgetDelivery'>;
  services: Pick<DeployTriggerRepo, 'withRepo'>;
  engine: Pick<DeployEngine, 'trigger'>;
  events: Pick<Events, 'record' | 'poke'>;
  /** A push's blueprints: those with autoSync on the repo and branch sync; returns the syncs started. */
  syncBlueprints?: (workspaceId: string, onRepo: (repo: string, branch: string | null) => boolean) => Promise<string[]>;
  /** Render's pull-request previews. */
  previews?: Pick<Previews, 'pullRequest'>;
  /** Told of each deploy a push started (the commit status goes back to GitHub). */
  onPushDeploy?: (service: ServiceRow, deployId: string, commitId: string) => void;
  log: Logger;
}) {
  /** The linked workspace of a delivery's installation, and a test for a service's repo and branch. */
  async function scope(p: { installation?: { id?: number }; repository?: PushPayload['repository'] }, branch: string) {
    const link = p.installation?.id ? await deps.repo.installation(String(p.installation.id)) : undefined;
    const webUrl = deps.webUrl;
    if (!link || link.suspended || !webUrl) return undefined;
    const key = githubRepoKey(p.repository?.html_url ?? '', webUrl);
    if (!key) return undefined;
    const onRepo = (repo: string, serviceBranch: string | null) =>
      (serviceBranch ?? p.repository?.default_branch) === branch && githubRepoKey(repo, webUrl) === key;
    return { workspaceId: link.workspaceId, onRepo };
  }

  async function pullRequest(
    p: PullRequestPayload & { installation?: { id?: number }; repository?: PushPayload['repository'] },
  ) {
    const base = p.pull_request?.base?.ref;
    const found = base ? await scope(p, base) : undefined;
    if (!found || !deps.previews) return [];
    const parents = (await deps.services.withRepo(found.workspaceId)).filter((s) => found.onRepo(s.repo!, s.branch));
    return deps.previews.pullRequest(parents, p);
  }

  async function push(p: PushPayload) {
    const branch = p.ref?.startsWith('refs/heads/') ? p.ref.slice('refs/heads/'.length) : undefined;
    const commitId = p.after;
    const none = { deploys: [], ignored: [], syncs: [] };
    if (!branch || p.deleted || !commitId || !/^[0-9a-f]{40,64}$/.test(commitId)) return none;
    const found = await scope(p, branch);
    if (!found) return none;
    const { workspaceId, onRepo } = found;
    const changed = (p.commits ?? []).flatMap((c) => [...(c.added ?? []), ...(c.modified ?? []), ...(c.removed ?? [])]);
    const deploys: string[] = [];
    const ignored: string[] = [];
    for (const service of await deps.services.withRepo(workspaceId)) {
      // Suspended by its user: no deploy (a crash-loop's suspension is lifted by the fix's deploy). A preview follows
      // its pull request's events, not pushes to its branch.
      const skip = service.autoDeploy !== 'yes' || service.suspenders.includes('user') || service.details.parentServer;
      if (skip || !onRepo(service.repo!, service.branch)) continue;
      // A push that lists no files (a force push, or more commits than GitHub lists) always counts.
      if (changed.length > 0 && !pushCounts(service.details.buildFilter, changed)) {
        ignored.push(service.id);
        await deps.events.record({
          workspaceId: service.workspaceId,
          serviceId: service.id,
          type: 'commit_ignored',
          details: {
            id: commitId,
            url: `${service.repo!.replace(/\.git$/, '')}/commit/${commitId}`,
            reason: 'no changed file matches the buildFilter',
          },
        });
        continue;
      }
      // One service's failure must not undo the others' deploys, which a redelivery would then start again.
      try {
        const deploy = await deps.engine.trigger(service, { trigger: 'new_commit', commitId });
        deploys.push(deploy.id);
        deps.onPushDeploy?.(service, deploy.id, commitId);
      } catch (err) {
        deps.log.warn({ serviceId: service.id, err: (err as Error).message }, 'push not deployed');
      }
    }
    deps.events.poke();
    const syncs = (await deps.syncBlueprints?.(workspaceId, onRepo)) ?? [];
    return { deploys, ignored, syncs };
  }

  async function installation(event: string, p: InstallationPayload) {
    const id = p.installation?.id ? String(p.installation.id) : undefined;
    if (!id || !(await deps.repo.installation(id))) return;
    if (event === 'installation' && p.action === 'deleted') return deps.repo.unlink(id);
    if (event === 'installation' && (p.action === 'suspend' || p.action === 'unsuspend'))
      return deps.repo.update(id, { suspended: p.action === 'suspend' });
    if (p.installation?.repository_selection)
      await deps.repo.update(id, { repositorySelection: p.installation.repository_selection });
  }

  /**
   * What can be refused from a delivery's headers alone, before its body (up to 25 MB) is read: an App not configured,
   * no well-formed signature, no delivery id, an event Slipway does not take.
   */
  function precheck({ signature, deliveryId, event }: Headers) {
    const verify = deps.verify;
    if (!verify) throw notConfigured();
    if (!signature || !SIGNATURE.test(signature))
      throw unauthorized('the X-Hub-Signature-256 header does not match this App’s webhook secret');
    if (!deliveryId || !DELIVERY_ID.test(deliveryId) || !event)
      throw badRequest('X-GitHub-Delivery and X-GitHub-Event are required');
    if (!EVENTS.has(event))
      throw badRequest(`Slipway does not take ${event} events: it takes ${[...EVENTS].join(', ')}`);
    return { verify, signature, deliveryId, event };
  }

  return {
    precheck,
    /** The signature is checked over `rawBody`; only then is the body parsed (`payload`). */
    async receive(input: Headers & { rawBody: string; payload(rawBody: string): unknown }) {
      const { verify, signature, deliveryId, event } = precheck(input);
      if (!(await verify(input.rawBody, signature)))
        throw unauthorized('the X-Hub-Signature-256 header does not match this App’s webhook secret');
      const payload = input.payload(input.rawBody); // a 400 before the delivery counts as seen
      if (!(await deps.repo.firstDelivery(deliveryId))) return { duplicate: true };
      // GitHub signs the body alone: the same body under another delivery id is a replay, not a new event (two real
      // pushes differ at least in repository.pushed_at). Remembered as long as delivery ids are.
      const bodyKey = `body:${hashToken(input.rawBody)}`;
      if (!(await deps.repo.firstDelivery(bodyKey))) return { duplicate: true };
      if (event === 'push' && pushedBeforeMemory(payload as PushPayload)) {
        deps.log.warn({ deliveryId }, 'a push older than the deliveries Slipway remembers: not deployed');
        return { duplicate: true };
      }
      try {
        if (event === 'push') return { duplicate: false, ...(await push(payload as PushPayload)) };
        if (event === 'pull_request')
          return { duplicate: false, previews: await pullRequest(payload as PullRequestPayload) };
        if (event === 'installation' || event === 'installation_repositories')
          await installation(event, payload as InstallationPayload);
        return { duplicate: false };
      } catch (err) {
        // Not handled: GitHub's redelivery of this id must be handled, not skipped as a repeat.
        await deps.repo.forgetDelivery(deliveryId).catch(() => undefined);
        await deps.repo.forgetDelivery(bodyKey).catch(() => undefined);
        throw err;
      }
    },
  };
}
export type GitHubWebhook = ReturnType<typeof createGitHubWebhook>;
