import { Type } from '@sinclair/typebox';
import type { InviteRow } from '../../store/repos/invites.js';
import type { MemberRow } from '../../store/repos/workspaces.js';
import { AppError } from '../../lib/errors.js';
import { ROLES } from '../../model/enums.js';
import type { Role as RoleName } from '../../core/principal.js';
import { literalUnion, Role, Timestamp } from './common.js';

/** Render's `teamMember`, with Slipway's lowercase role names. */
export const TeamMemberBody = Type.Object(
  {
    userId: Type.String(),
    name: Type.String(),
    email: Type.String(),
    status: Type.Literal('active'),
    role: Role,
    mfaEnabled: Type.Boolean(),
    joinedAt: Timestamp,
  },
  { title: 'teamMember' },
);
export const teamMemberBody = (m: MemberRow) => ({
  userId: m.userId,
  name: m.name,
  email: m.email,
  status: 'active' as const,
  role: m.role,
  mfaEnabled: false,
  joinedAt: m.createdAt.toISOString(),
});

const RENDER_ROLE = { owner: 'ADMIN', admin: 'ADMIN', developer: 'DEVELOPER', viewer: 'WORKSPACE_VIEWER' } as const;
const RENDER_ROLES = ['ADMIN', 'DEVELOPER', 'WORKSPACE_CONTRIBUTOR', 'WORKSPACE_BILLING', 'WORKSPACE_VIEWER'] as const;
/** Render's teamMemberRole, and Slipway's own role names (the only way to name `owner` on Render's path). */
export const OwnerMemberRole = literalUnion([...RENDER_ROLES, ...ROLES]);
/**
 * The role to give for one of Render's names: `ADMIN` keeps an owner an owner (Render's top role is both). Render's
 * contributor and billing roles have no Slipway counterpart: a 400 naming the field, not a guess.
 */
export function roleFromRender(role: string): RoleName | ((current: RoleName) => RoleName) {
  if ((ROLES as readonly string[]).includes(role)) return role as RoleName;
  if (role === 'ADMIN') return (current) => (current === 'owner' ? 'owner' : 'admin');
  if (role === 'DEVELOPER') return 'developer';
  if (role === 'WORKSPACE_VIEWER') return 'viewer';
  throw new AppError('validation_failed', `Slipway has no ${role} role`, [
    { field: 'role', message: 'use ADMIN, DEVELOPER, WORKSPACE_VIEWER, or owner, admin, developer, viewer' },
  ]);
}
/** A member as Render's retrieve-owner-members shows one: Render's role names. */
export const OwnerMemberBody = Type.Object({
  userId: Type.String(),
  name: Type.String(),
  email: Type.String(),
  status: Type.Literal('active'),
  role: Type.String(),
  mfaEnabled: Type.Boolean(),
});
export const ownerMemberBody = (m: MemberRow) => ({
  userId: m.userId,
  name: m.name,
  email: m.email,
  status: 'active' as const,
  role: RENDER_ROLE[m.role],
  mfaEnabled: false,
});

export const InviteBody = Type.Object(
  {
    id: Type.String(),
    ownerId: Type.String(),
    email: Type.String(),
    role: Role,
    status: Type.Literal('pending'),
    createdAt: Timestamp,
    expiresAt: Timestamp,
  },
  { title: 'teamInvite' },
);
export const inviteBody = (i: InviteRow) => ({
  id: i.id,
  ownerId: i.workspaceId,
  email: i.email,
  role: i.role,
  status: 'pending' as const,
  createdAt: i.createdAt.toISOString(),
  expiresAt: i.expiresAt.toISOString(),
});
