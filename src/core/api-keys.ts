import { newId } from '../lib/ids.js';
import { hashToken, randomToken } from '../lib/tokens.js';
import type { ApiKeyRepo } from '../store/repos/api-keys.js';
import { API_KEY_PREFIX } from './auth.js';
import { principalChange, type PrincipalCache } from './principal-cache.js';

export function createApiKeys(
  repo: Pick<ApiKeyRepo, 'insert' | 'get' | 'list'>,
  principals: PrincipalCache,
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
    /** Every process stops accepting the key at once (src/core/principal-cache.ts). */
    revoke: (id: string) => principals.change([principalChange.apiKey(id)], (repos) => repos.apiKeys.revoke(id, now())),
  };
}
export type ApiKeys = ReturnType<typeof createApiKeys>;
