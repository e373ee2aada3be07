import { AppError, conflict, forbidden } from '../lib/errors.js';
import { newId } from '../lib/ids.js';
import { DUMMY_PASSWORD_HASH, hashPassword, verifyPassword } from '../lib/passwords.js';
import { constantTimeEqual, hashToken, randomToken } from '../lib/tokens.js';
import type { Transact } from '../store/repos/index.js';
import type { ApiKeyRepo, ApiKeyRow } from '../store/repos/api-keys.js';
import type { SessionRepo } from '../store/repos/sessions.js';
import type { UserRepo, UserRow } from '../store/repos/users.js';
import type { Principal } from './principal.js';
import { principalChange, type PrincipalCache } from './principal-cache.js';
import { joinWithInvite, type ValidInvite } from './team.js';
import { isUniqueViolation } from '../store/db.js';

export const normalizeEmail = (email: string) => email.trim().toLowerCase();
export const API_KEY_PREFIX = 'slw_';
const DAY_MS = 86_400_000;

interface AuthDeps {
  users: Pick<UserRepo, 'findByEmail'>;
  sessions: Pick<SessionRepo, 'insert' | 'findByTokenHash'>;
  apiKeys: Pick<ApiKeyRepo, 'findByTokenHash' | 'touch'>;
  transact: Transact;
  principals: PrincipalCache;
  sessionTtlDays: number;
  operatorToken: string | undefined;
  /**
   * How stale an API key's lastUsedAt may get (SLIPWAY_API_KEY_TOUCH_SECONDS): writing it on every
   * request would double the cost of a read; a minute is precise enough.
   */
  touchIntervalMs: number;
  log: { warn(o: object, m?: string): void };
  now?: () => Date;
}

export function createAuth(deps: AuthDeps) {
  const now = deps.now ?? (() => new Date());

  /** Cached or not, a key in use gets its lastUsedAt written once per touch interval. */
  async function touchIfStale(apiKey: ApiKeyRow) {
    const at = now();
    if (apiKey.lastUsedAt && at.getTime() - apiKey.lastUsedAt.getTime() <= deps.touchIntervalMs) return;
    apiKey.lastUsedAt = at; // the cached row too: the next hits do not write it again
    // A failed write costs one interval of precision, not the request.
    await deps.apiKeys.touch(apiKey.id, at).catch((err: unknown) => {
      deps.log.warn({ err, apiKeyId: apiKey.id }, "could not record the API key's last use");
    });
  }

  async function startSession(user: UserRow) {
    const token = randomToken();
    const expiresAt = new Date(now().getTime() + deps.sessionTtlDays * DAY_MS);
    await deps.sessions.insert({ id: newId('session'), tokenHash: hashToken(token), userId: user.id, expiresAt });
    return { token, expiresAt };
  }

  async function createAccount(input: {
    email: string;
    name: string;
    passwordHash: string | null;
    invite?: ValidInvite;
    identity?: { provider: string; subject: string; emailVerified: boolean };
  }) {
    const email = normalizeEmail(input.email);
    if (await deps.users.findByEmail(email)) throw conflict('an account with this email already exists');
    const { user, workspaceId } = await deps
      .transact(async (repos) => {
        const userId = newId('user');
        const workspaceId = newId('workspace');
        const user = await repos.users.insert({
          id: userId,
          email,
          name: input.name.trim(),
          passwordHash: input.passwordHash,
          defaultWorkspaceId: workspaceId,
        });
        await repos.workspaces.insert({ id: workspaceId, name: `${user.name}'s workspace`, ownerUserId: userId });
        await repos.workspaces.putMember(workspaceId, userId, 'owner');
        if (input.identity) await repos.identities.insert({ id: newId('identity'), userId, email, ...input.identity });
        // No process can have cached anything of a user made just now: nothing to drop.
        if (input.invite) await joinWithInvite(repos, input.invite, user, now());
        return { user, workspaceId };
      })
      .catch((err: unknown) => {
        // Two registrations racing for one email: the unique index decides.
        throw isUniqueViolation(err) ? conflict('an account with this email already exists') : err;
      });
    return { user, workspaceId, session: await startSession(user) };
  }

  return {
    /** A new account and its workspace (joining the invite's too), signed in. */
    register: async (input: { email: string; name: string; password: string; invite?: ValidInvite }) =>
      createAccount({ ...input, passwordHash: await hashPassword(input.password) }),
    /**
     * An account made by an OAuth sign-in: no password, its provider identity linked in the same transaction (so a
     * second callback racing it finds the identity, or fails on its unique index).
     */
    registerWithIdentity: (input: {
      email: string;
      name: string;
      invite?: ValidInvite;
      identity: { provider: string; subject: string; emailVerified: boolean };
    }) => createAccount({ ...input, passwordHash: null }),
    /** A session for a user who proved who they are some other way (an OAuth sign-in). */
    signIn: startSession,

    async login(input: { email: string; password: string }) {
      const user = await deps.users.findByEmail(normalizeEmail(input.email));
      // Verify against a dummy hash for unknown emails so timing does not tell them apart.
      const ok = await verifyPassword(input.password, user?.passwordHash ?? DUMMY_PASSWORD_HASH);
      if (!user || !ok) throw new AppError('unauthorized', 'wrong email or password');
      return { user, session: await startSession(user) };
    },

    logout: (sessionId: string) =>
      deps.principals.change([principalChange.session(sessionId)], (repos) => repos.sessions.delete(sessionId)),

    fromSessionToken(token: string): Promise<Principal | undefined> {
      const tokenHash = hashToken(token);
      // Keyed apart from API keys': a key sent as a cookie must not find the key's principal.
      return deps.principals.get(`session-token:${tokenHash}`, async () => {
        const found = await deps.sessions.findByTokenHash(tokenHash);
        if (!found || found.session.expiresAt <= now()) return undefined;
        const { session, user } = found;
        const principal: Principal = { kind: 'user', user, sessionId: session.id };
        return { value: principal, change: principalChange.session(session.id), expiresAt: session.expiresAt };
      });
    },

    async fromBearerToken(token: string): Promise<Principal | undefined> {
      if (deps.operatorToken && constantTimeEqual(token, deps.operatorToken)) return { kind: 'operator' };
      if (!token.startsWith(API_KEY_PREFIX)) return undefined;
      const tokenHash = hashToken(token);
      const principal = await deps.principals.get(`api-key-token:${tokenHash}`, async () => {
        const found = await deps.apiKeys.findByTokenHash(tokenHash);
        if (!found || found.apiKey.revokedAt || (found.apiKey.expiresAt && found.apiKey.expiresAt <= now()))
          return undefined;
        const { apiKey, user } = found;
        const value = { kind: 'api_key' as const, user, apiKey };
        return { value, change: principalChange.apiKey(apiKey.id), expiresAt: apiKey.expiresAt };
      });
      if (principal) await touchIfStale(principal.apiKey);
      return principal;
    },
  };
}
export type Auth = ReturnType<typeof createAuth>;

export function requireUser(principal: Principal): UserRow {
  if (principal.kind === 'operator')
    throw forbidden('this needs a user: sign in or use an API key, not the operator token');
  return principal.user;
}
