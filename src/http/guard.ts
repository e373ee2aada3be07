import type { FastifyRequest } from 'fastify';
import type { Access } from '../core/access.js';
import type { Principal, Role } from '../core/principal.js';
import { badRequest } from '../lib/errors.js';

/**
 * Handlers call these to act in a workspace: they check the caller's role there against
 * the route's declared access, and note the workspace for the audit entry.
 */
export function createGuard(access: Access) {
  async function workspace(
    request: FastifyRequest,
    workspaceId: string,
    what = 'resource',
    atLeast?: Role,
  ): Promise<{ workspaceId: string; role: Role }> {
    const principal = principalOf(request);
    const declared = request.routeOptions.config.access;
    const minRole: Role =
      atLeast ??
      (declared === 'public' || declared === 'signed-in' || declared === 'operator' || !declared ? 'viewer' : declared);
    const role = await access.roleIn(principal, workspaceId);
    if (role) request.auditInfo.workspaceId = workspaceId; // members' denied attempts show in their workspace's log
    return { workspaceId, role: access.check(role, minRole, what) };
  }
  return {
    /** The workspace named by `ownerId`, or the caller's default one. */
    context(request: FastifyRequest, ownerId: string | undefined) {
      const workspaceId = ownerId ?? access.defaultWorkspaceId(principalOf(request));
      if (!workspaceId) throw badRequest('ownerId is required with the operator token');
      return workspace(request, workspaceId, 'workspace');
    },
    /** The workspace a `/…/:ownerId` route acts on (checked as `context`), recorded as its audit event's target. */
    async owner(request: FastifyRequest, ownerId: string): Promise<string> {
      const { workspaceId } = await this.context(request, ownerId);
      request.auditInfo.target = workspaceId;
      return workspaceId;
    },
    /**
     * The workspaces a list acts on: those named by `ownerId` (each checked), else the
     * caller's default one; undefined (every workspace) for the operator without ownerId.
     */
    async listScope(request: FastifyRequest, ownerIds: string[] | undefined): Promise<string[] | undefined> {
      if (ownerIds?.length)
        return Promise.all(ownerIds.map(async (id) => (await this.context(request, id)).workspaceId));
      return principalOf(request).kind === 'operator'
        ? undefined
        : [(await this.context(request, undefined)).workspaceId];
    },
    /**
     * The workspace that owns an existing resource: 404 when the caller cannot see it. `atLeast`: the role needed
     * there, for a `signed-in` route whose workspace comes from its input (GitHub's callback state), not `ownerId`.
     */
    resource: (request: FastifyRequest, workspaceId: string, what: string, atLeast?: Role) =>
      workspace(request, workspaceId, what, atLeast),
  };
}
export type Guard = ReturnType<typeof createGuard>;

export function principalOf(request: FastifyRequest): Principal {
  if (!request.principal)
    throw new Error(`route ${request.routeOptions.url} used a principal without declaring access`);
  return request.principal;
}
