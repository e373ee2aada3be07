import { ROLES } from '../model/enums.js';
import type { ApiKeyRow } from '../store/repos/api-keys.js';
import type { UserRow } from '../store/repos/users.js';
import type { Role } from '../store/repos/workspaces.js';

/** Who is calling: a signed-in user, an API key (acting for its user in one workspace), or the operator. */
export type Principal =
  | { kind: 'user'; user: UserRow; sessionId: string }
  | { kind: 'api_key'; user: UserRow; apiKey: ApiKeyRow }
  | { kind: 'operator' };

export type { Role };

/** viewer 0 … owner 3: ROLES lists the highest first. */
export const roleRank = (role: Role) => ROLES.length - 1 - ROLES.indexOf(role);
export const roleAtLeast = (role: Role, min: Role) => roleRank(role) >= roleRank(min);
/**
 * Who reads secret values that are not their service's own (docs/datastores.md, "Env groups"): an env group's variables, and
 * the resolved view of a service's environment. Below admin they read as MASKED_VALUE (core/services/env-view.ts).
 */
export const readsSecrets = (role: Role) => roleAtLeast(role, 'admin');

export function principalUser(p: Principal): UserRow | undefined {
  return p.kind === 'operator' ? undefined : p.user;
}
