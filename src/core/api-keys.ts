import { forbidden } from '../lib/errors.js';
import { newId } from '../lib/ids.js';
import { hashToken, randomToken } from '../lib/tokens.js';
import type { ApiKeyRepo, ApiKeyRow } from '../store/repos/api-keys.js';
import type { WorkspaceRepo } from '../store/repos/workspaces.js';
import { API_KEY_PREFIX } from './auth.js';
import { roleRank, type Role } from './principal.js';
import { principalChange, type PrincipalCache } from './principal-cache.js';

export function createApiKeys(
  repo: Pick<ApiKeyRepo, 'insert' | 'get' | 'list'>,
  principals: PrincipalCache,
  workspaces: Pick<WorkspaceRepo, 'roleOf'>,
  now: () => Date = () => new Date(),
) {
  return {
    /** The token is returned here once; only its hash is stored. */
    async create(input: { workspaceId: string; userId: string; name: string; expiresAt?: Date }) {
      const token = randomToken(API_KEY_PREFIX);
      const apiKey = await repo.insert({
        id: newId('apiKey'),
        name: input.name.trim(),
        tokenHash: hashToken(token),
        prefix: token.slice(0, API_KEY_PREFIX.length + 6),
        userId: input.userId,
        workspaceId: input.workspaceId,
        expiresAt: input.expiresAt ?? null,
      });
      return { apiKey, token };
    },
    get: repo.get,
    list: repo.list,
    /**
     * Revoked by a caller with `role` in the key's workspace (`userId` undefined: the operator): their own key, or
     * the key of a member not ranked above them, so an admin cannot take an owner's key away. Every process stops
     * accepting it at once (src/core/principal-cache.ts).
     */
    async revoke(key: ApiKeyRow, caller: { userId: string | undefined; role: Role }) {
      if (caller.userId !== key.userId) {
        const holder = await workspaces.roleOf(key.workspaceId, key.userId);
        if (holder && roleRank(holder) > roleRank(caller.role))
          throw forbidden(`this key belongs to a ${holder}; only an ${holder} or the key's own user may revoke it`);
      }
      await principals.change([principalChange.apiKey(key.id)], (repos) => repos.apiKeys.revoke(key.id, now()));
    },
  };
}
export type ApiKeys = ReturnType<typeof createApiKeys>;
