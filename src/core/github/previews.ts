import { conflict } from '../../lib/errors.js';
import type { Logger } from '../../lib/logger.js';
import type { ServiceRow } from '../../store/repos/services.js';
import type { DeployEngine } from '../deploys/engine.js';
import { copyVars } from '../services/copy-vars.js';
import type { EnvVars } from '../services/env-vars.js';
import type { Services } from '../services/services.js';

export interface PullRequestPayload {
  action?: string;
  number?: number;
  pull_request?: {
    head?: { ref?: string; sha?: string; repo?: { full_name?: string } | null };
    base?: { ref?: string; repo?: { full_name?: string } };
  };
}

/** The preview of `parent` for pull request `number`: Render names it after both. */
export const previewName = (parent: { name: string }, number: number) => `${parent.name}-pr-${number}`;

/**
 * Render's pull-request previews: for each service on the pull request's base repo and branch with
 * `previews.generation: automatic`, `opened`/`reopened` creates a preview service (the parent's settings and env vars,
 * `parentServer` naming the parent, the head branch) and deploys the head commit, `synchronize` deploys the new head,
 * and `closed` deletes the preview. Pull requests from forks get none: their code would run with the parent's secrets.
 */
export function createPreviews(deps: {
  services: Pick<Services, 'create' | 'remove'>;
  envVars: Pick<EnvVars, 'list'>;
  engine: Pick<DeployEngine, 'trigger'>;
  find: (workspaceId: string, name: string) => Promise<ServiceRow | undefined>;
  log: Logger;
}) {
  async function open(parent: ServiceRow, name: string, branch: string): Promise<ServiceRow> {
    const existing = await deps.find(parent.workspaceId, name);
    if (existing && existing.details.parentServer?.id !== parent.id)
      throw conflict(`a service named ${name} exists and is not this pull request's preview`);
    if (existing) return existing;
    const { service } = await deps.services.create(
      parent.workspaceId,
      {
        type: parent.type,
        name,
        repo: parent.repo!,
        branch,
        rootDir: parent.rootDir,
        // Deployed by its pull request's events (synchronize), not by pushes to its branch as well.
        autoDeploy: 'no',
        environmentId: parent.environmentId ?? undefined,
        envVars: await copyVars(deps.envVars, parent),
      },
      {
        deploy: false,
        details: {
          ...parent.details,
          previews: { generation: 'off' },
          parentServer: { id: parent.id, name: parent.name },
        },
      },
    );
    return service;
  }

  return {
    /** Handles one `pull_request` event for the services it concerns; returns the previews it deployed or deleted. */
    async pullRequest(parents: ServiceRow[], p: PullRequestPayload): Promise<string[]> {
      const pr = p.pull_request;
      const sha = pr?.head?.sha;
      const fromFork = pr?.head?.repo?.full_name !== pr?.base?.repo?.full_name;
      if (!p.number || !pr?.head?.ref || !sha || fromFork) return [];
      const touched: string[] = [];
      for (const parent of parents) {
        if (parent.details.previews?.generation !== 'automatic' || parent.details.parentServer) continue;
        const name = previewName(parent, p.number);
        try {
          if (p.action === 'closed') {
            const preview = await deps.find(parent.workspaceId, name);
            if (preview?.details.parentServer?.id === parent.id) {
              await deps.services.remove(preview);
              touched.push(preview.id);
            }
          } else if (p.action === 'opened' || p.action === 'reopened' || p.action === 'synchronize') {
            const preview = await open(parent, name, pr.head.ref);
            await deps.engine.trigger(preview, { trigger: 'new_commit', commitId: sha });
            touched.push(preview.id);
          }
        } catch (err) {
          deps.log.warn({ serviceId: parent.id, err: (err as Error).message }, 'pull-request preview not updated');
        }
      }
      return touched;
    },
  };
}
export type Previews = ReturnType<typeof createPreviews>;
