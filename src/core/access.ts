import { forbidden, notFound } from '../lib/errors.js';
import type { WorkspaceRepo } from '../store/repos/workspaces.js';
import { roleAtLeast, type Principal, type Role } from './principal.js';
import { principalChange, type PrincipalCache } from './principal-cache.js';

/**
 * Workspace authorization. A workspace the caller cannot see answers 404 (it might as
 * well not exist); one it can see but with too low a role answers 403.
 */
export function createAccess(workspaces: Pick<WorkspaceRepo, 'get' | 'roleOf'>, principals: PrincipalCache) {
  /**
   * Looked up on every workspace request: cached until the membership changes. "Not a member" is not cached: any
   * signed-in caller can ask about any number of made-up workspace ids, which would push everyone's entries out.
   */
  async function roleOf(workspaceId: string, userId: string): Promise<Role | undefined> {
    const change = principalChange.member(workspaceId, userId);
    return principals.get(change, async () => {
      const role = await workspaces.roleOf(workspaceId, userId);
      return role ? { value: role, change } : undefined;
    });
  }

  async function roleIn(principal: Principal, workspaceId: string): Promise<Role | undefined> {
    switch (principal.kind) {
      case 'operator':
        return (await workspaces.get(workspaceId)) ? 'owner' : undefined;
      case 'api_key':
        // A key acts in its own workspace only, with its user's current role there.
        return workspaceId === principal.apiKey.workspaceId ? roleOf(workspaceId, principal.user.id) : undefined;
      case 'user':
        return roleOf(workspaceId, principal.user.id);
    }
  }

  return {
    roleIn,
    /** Checks a role already looked up with `roleIn` (one query per request, not two). */
    check(role: Role | undefined, minRole: Role, what = 'resource'): Role {
      if (!role) throw notFound(what);
      if (!roleAtLeast(role, minRole)) throw forbidden(`this needs the ${minRole} role; you are ${role}`);
      return role;
    },
    /** The workspace a request acts in when it names none. */
    defaultWorkspaceId(principal: Principal): string | undefined {
      if (principal.kind === 'api_key') return principal.apiKey.workspaceId;
      if (principal.kind === 'user') return principal.user.defaultWorkspaceId;
      return undefined;
    },
  };
}
export type Access = ReturnType<typeof createAccess>;
