import { AppError, conflict, forbidden } from '../lib/errors.js';
import { newId } from '../lib/ids.js';
import { DUMMY_PASSWORD_HASH, hashPassword, verifyPassword } from '../lib/passwords.js';
import { constantTimeEqual, hashToken, randomToken } from '../lib/tokens.js';
import type { Transact } from '../store/repos/index.js';
import type { ApiKeyRepo } from '../store/repos/api-keys.js';
import type { SessionRepo } from '../store/repos/sessions.js';
import type { UserRepo, UserRow } from '../store/repos/users.js';
import type { Principal } from './principal.js';
import { joinWithInvite, type ValidInvite } from './team.js';
import { isUniqueViolation } from '../store/db.js';

export const normalizeEmail = (email: string) => email.trim().toLowerCase();
export const API_KEY_PREFIX = 'slw_';
const DAY_MS = 86_400_000;
// Writing lastUsedAt on every request would double the cost of a read; a minute is precise enough.
const TOUCH_INTERVAL_MS = 60_000;

interface AuthDeps {
  users: Pick<UserRepo, 'findByEmail'>;
  sessions: Pick<SessionRepo, 'insert' | 'findByTokenHash' | 'delete'>;
  apiKeys: Pick<ApiKeyRepo, 'findByTokenHash' | 'touch'>;
  transact: Transact;
  sessionTtlDays: number;
  operatorToken: string | undefined;
  now?: () => Date;
}

export function createAuth(deps: AuthDeps) {
  const now = deps.now ?? (() => new Date());

  async function startSession(user: UserRow) {
    const token = randomToken();
    const expiresAt = new Date(now().getTime() + deps.sessionTtlDays * DAY_MS);
    await deps.sessions.insert({ id: newId('session'), tokenHash: hashToken(token), userId: user.id, expiresAt });
    return { token, expiresAt };
  }

  return {
    async register(input: { email: string; name: string; password: string; invite?: ValidInvite }) {
      const email = normalizeEmail(input.email);
      if (await deps.users.findByEmail(email)) throw conflict('an account with this email already exists');
      const passwordHash = await hashPassword(input.password);
      const { user, workspaceId } = await deps
        .transact(async (repos) => {
          const userId = newId('user');
          const workspaceId = newId('workspace');
          const user = await repos.users.insert({
            id: userId,
            email,
            name: input.name.trim(),
            passwordHash,
            defaultWorkspaceId: workspaceId,
          });
          await repos.workspaces.insert({ id: workspaceId, name: `${user.name}'s workspace`, ownerUserId: userId });
          await repos.workspaces.putMember(workspaceId, userId, 'owner');
          if (input.invite) await joinWithInvite(repos, input.invite, user, now());
          return { user, workspaceId };
        })
        .catch((err: unknown) => {
          // Two registrations racing for one email: the unique index decides.
          throw isUniqueViolation(err) ? conflict('an account with this email already exists') : err;
        });
      return { user, workspaceId, session: await startSession(user) };
    },

    async login(input: { email: string; password: string }) {
      const user = await deps.users.findByEmail(normalizeEmail(input.email));
      // Verify against a dummy hash for unknown emails so timing does not tell them apart.
      const ok = await verifyPassword(input.password, user?.passwordHash ?? DUMMY_PASSWORD_HASH);
      if (!user || !ok) throw new AppError('unauthorized', 'wrong email or password');
      return { user, session: await startSession(user) };
    },

    logout: (sessionId: string) => deps.sessions.delete(sessionId),

    async fromSessionToken(token: string): Promise<Principal | undefined> {
      const found = await deps.sessions.findByTokenHash(hashToken(token));
      if (!found || found.session.expiresAt <= now()) return undefined;
      return { kind: 'user', user: found.user, sessionId: found.session.id };
    },

    async fromBearerToken(token: string): Promise<Principal | undefined> {
      if (deps.operatorToken && constantTimeEqual(token, deps.operatorToken)) return { kind: 'operator' };
      if (!token.startsWith(API_KEY_PREFIX)) return undefined;
      const found = await deps.apiKeys.findByTokenHash(hashToken(token));
      const at = now();
      if (!found || found.apiKey.revokedAt || (found.apiKey.expiresAt && found.apiKey.expiresAt <= at))
        return undefined;
      const { apiKey, user } = found;
      if (!apiKey.lastUsedAt || at.getTime() - apiKey.lastUsedAt.getTime() > TOUCH_INTERVAL_MS) {
        await deps.apiKeys.touch(apiKey.id, at);
      }
      return { kind: 'api_key', user, apiKey };
    },
  };
}
export type Auth = ReturnType<typeof createAuth>;

export function requireUser(principal: Principal): UserRow {
  if (principal.kind === 'operator')
    throw forbidden('this needs a user: sign in or use an API key, not the operator token');
  return principal.user;
}
