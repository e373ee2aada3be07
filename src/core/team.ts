import { badRequest, conflict, forbidden, notFound } from '../lib/errors.js';
import { newId } from '../lib/ids.js';
import { hashToken, randomToken } from '../lib/tokens.js';
import type { Repos } from '../store/repos/index.js';
import type { InviteRepo, InviteRow } from '../store/repos/invites.js';
import type { UserRow } from '../store/repos/users.js';
import type { MemberRow, WorkspaceRepo } from '../store/repos/workspaces.js';
import { roleAtLeast, type Role } from './principal.js';
import { principalChange, type PrincipalCache } from './principal-cache.js';

const DAY_MS = 86_400_000;
/** An invite checked to be pending, unexpired and addressed to the user about to use it. */
export type ValidInvite = InviteRow & { readonly checked: true };

/** Inside a transaction: the invite is consumed once and the user joins with its role. */
export async function joinWithInvite(
  repos: Pick<Repos, 'invites' | 'workspaces'>,
  invite: ValidInvite,
  user: UserRow,
  now: Date,
) {
  if (!(await repos.invites.markAccepted(invite.id, user.id, now))) throw conflict('this invite has already been used');
  const current = await repos.workspaces.roleOf(invite.workspaceId, user.id);
  // Joining never demotes someone who is already a member.
  if (!current || !roleAtLeast(current, invite.role))
    await repos.workspaces.putMember(invite.workspaceId, user.id, invite.role);
}

interface TeamDeps {
  workspaces: Pick<WorkspaceRepo, 'roleOf' | 'countOwners' | 'listMembers'>;
  invites: Pick<InviteRepo, 'insert' | 'findByTokenHash' | 'get' | 'listPending' | 'delete'>;
  /** Membership changes go through it: every process's cached role of that member is dropped at once. */
  principals: PrincipalCache;
  inviteTtlDays: number;
  now?: () => Date;
}

export function createTeam(deps: TeamDeps) {
  const now = deps.now ?? (() => new Date());

  /** Only an owner may hand out or take away the owner role. */
  function checkGrant(actorRole: Role, role: Role) {
    if (role === 'owner' && actorRole !== 'owner') throw forbidden('only an owner can grant the owner role');
  }

  /**
   * Changes one membership: `decide` sees the member's current role and the number of owners, read under a lock of
   * the workspace's memberships in the same transaction, so two changes at once cannot both take the last owner away
   * (or bring back a member removed meanwhile).
   */
  function changeMember(
    workspaceId: string,
    userId: string,
    decide: (current: Role, owners: () => Promise<number>) => Promise<void> | void,
    apply: (repos: Repos) => Promise<void>,
  ) {
    return deps.principals.change([principalChange.member(workspaceId, userId)], async (repos) => {
      await repos.workspaces.lockMembers(workspaceId);
      const current = await repos.workspaces.roleOf(workspaceId, userId);
      if (!current) throw notFound('team member');
      await decide(current, () => repos.workspaces.countOwners(workspaceId));
      await apply(repos);
    });
  }

  return {
    listMembers: deps.workspaces.listMembers,
    /** One member of the workspace, else 404. */
    async member(workspaceId: string, userId: string): Promise<MemberRow> {
      const [row] = await deps.workspaces.listMembers(workspaceId, { limit: 1, onlyUserId: userId });
      if (!row) throw notFound('team member');
      return row;
    },

    /**
     * `role`, or the role to give as a function of the member's current one (read under the lock): Render's `ADMIN`
     * is Slipway's owner or admin, so an owner sent `ADMIN` stays one.
     */
    changeRole(workspaceId: string, actorRole: Role, userId: string, to: Role | ((current: Role) => Role)) {
      let role: Role;
      return changeMember(
        workspaceId,
        userId,
        async (current, owners) => {
          role = typeof to === 'function' ? to(current) : to;
          checkGrant(actorRole, role);
          checkGrant(actorRole, current);
          if (current === 'owner' && role !== 'owner' && (await owners()) <= 1)
            throw conflict('a workspace needs at least one owner');
        },
        (repos) => repos.workspaces.putMember(workspaceId, userId, role),
      );
    },

    removeMember(workspaceId: string, actorRole: Role, userId: string) {
      return changeMember(
        workspaceId,
        userId,
        async (current, owners) => {
          checkGrant(actorRole, current);
          if (current === 'owner' && (await owners()) <= 1) throw conflict('a workspace needs at least one owner');
        },
        (repos) => repos.workspaces.removeMember(workspaceId, userId),
      );
    },

    async invite(workspaceId: string, actorRole: Role, invitedBy: string, input: { email: string; role: Role }) {
      checkGrant(actorRole, input.role);
      const token = randomToken('inv_');
      const invite = await deps.invites.insert({
        id: newId('invite'),
        workspaceId,
        email: input.email.trim().toLowerCase(),
        role: input.role,
        tokenHash: hashToken(token),
        invitedBy,
        expiresAt: new Date(now().getTime() + deps.inviteTtlDays * DAY_MS),
      });
      return { invite, token };
    },

    listInvites: (workspaceId: string, opts: { beforeId?: string; limit: number }) =>
      deps.invites.listPending(workspaceId, now(), opts),

    async getInvite(inviteId: string) {
      const invite = await deps.invites.get(inviteId);
      if (!invite || invite.acceptedAt) throw notFound('invite');
      return invite;
    },

    revokeInvite: (inviteId: string) => deps.invites.delete(inviteId),

    /**
     * The invite behind `token`, if `email` may use it. An invite addressed to someone
     * else answers 404 like an unknown one, so tokens cannot be probed.
     */
    async checkInvite(token: string, email: string): Promise<ValidInvite> {
      const invite = await deps.invites.findByTokenHash(hashToken(token));
      if (!invite || invite.email !== email.trim().toLowerCase()) throw notFound('invite');
      if (invite.acceptedAt) throw conflict('this invite has already been used');
      if (invite.expiresAt <= now()) throw badRequest('this invite has expired; ask for a new one');
      return invite as ValidInvite;
    },

    // The joining user may have asked for the workspace before (a cached "not a member").
    accept: (invite: ValidInvite, user: UserRow) =>
      deps.principals.change([principalChange.member(invite.workspaceId, user.id)], (repos) =>
        joinWithInvite(repos, invite, user, now()),
      ),
  };
}
export type Team = ReturnType<typeof createTeam>;
