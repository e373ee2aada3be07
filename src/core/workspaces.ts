import { notFound } from '../lib/errors.js';
import type { UserRepo } from '../store/repos/users.js';
import type { WorkspaceRepo, WorkspaceRow } from '../store/repos/workspaces.js';
import type { Principal } from './principal.js';

/** Workspace lookups (Render's owners); who may act in one is core/access.ts. */
export function createWorkspaces(deps: {
  workspaces: Pick<WorkspaceRepo, 'get' | 'list' | 'workspaceIdsOf'>;
  users: Pick<UserRepo, 'findByEmail'>;
}) {
  const { workspaces } = deps;
  return {
    async get(id: string): Promise<WorkspaceRow> {
      const row = await workspaces.get(id);
      if (!row) throw notFound('workspace');
      return row;
    },
    /** The workspaces a principal can see, in id order after `afterId`: the operator every one, an API key its own. */
    async listVisible(principal: Principal, page: { afterId?: string; limit: number }): Promise<WorkspaceRow[]> {
      const onlyIds =
        principal.kind === 'operator'
          ? undefined
          : principal.kind === 'api_key'
            ? [principal.apiKey.workspaceId]
            : await workspaces.workspaceIdsOf(principal.user.id);
      return workspaces.list({ onlyIds, ...page });
    },
    /** The default workspace of the account with this (normalized) email, if there is one: where its failed logins are audited. */
    defaultOfEmail: async (email: string) => (await deps.users.findByEmail(email))?.defaultWorkspaceId,
  };
}
export type Workspaces = ReturnType<typeof createWorkspaces>;
