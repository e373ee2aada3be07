import { Type } from '@sinclair/typebox';
import type { UserRow } from '../../store/repos/users.js';
import type { WorkspaceRow } from '../../store/repos/workspaces.js';
import { Timestamp } from './common.js';

/** Render's `user`, plus id and createdAt. */
export const UserBody = Type.Object(
  { id: Type.String(), email: Type.String(), name: Type.String(), createdAt: Timestamp },
  { title: 'user' },
);
export const userBody = (u: UserRow) => ({
  id: u.id,
  email: u.email,
  name: u.name,
  createdAt: u.createdAt.toISOString(),
});

/** Render's `owner` (a workspace is a team). */
export const OwnerBody = Type.Object(
  { id: Type.String(), name: Type.String(), email: Type.String(), type: Type.Literal('team'), createdAt: Timestamp },
  { title: 'owner' },
);
export const ownerBody = (w: WorkspaceRow) => ({
  id: w.id,
  name: w.name,
  email: w.ownerEmail,
  type: 'team' as const,
  createdAt: w.createdAt.toISOString(),
});
