import { Type } from '@sinclair/typebox';
import type { InviteRow } from '../../store/repos/invites.js';
import type { MemberRow } from '../../store/repos/workspaces.js';
import { Role, Timestamp } from './common.js';

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
