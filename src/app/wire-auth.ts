import type { Config } from './config.js';
import { createApiKeys } from '../core/api-keys.js';
import { createAuth } from '../core/auth.js';
import { createDeviceCookies } from '../core/device-cookies.js';
import { createOAuth } from '../core/oauth.js';
import type { PrincipalCache } from '../core/principal-cache.js';
import { createTeam } from '../core/team.js';
import { createSignInProviders } from '../integrations/sign-in.js';
import type { Logger } from '../lib/logger.js';
import type { SecretBox } from '../lib/secret-box.js';
import type { Repos, Transact } from '../store/repos/index.js';

/** Who is calling and how they sign in: passwords and sessions, API keys, the team, and OAuth providers. */
export function wireAuth(deps: {
  config: Config;
  repos: Repos;
  transact: Transact;
  principals: PrincipalCache;
  box: SecretBox;
  log: Logger;
}) {
  const { config, repos, principals } = deps;
  const auth = createAuth({
    ...repos,
    transact: deps.transact,
    principals,
    sessionTtlDays: config.sessionTtlDays,
    operatorToken: config.operatorToken,
    touchIntervalMs: config.apiKeyTouchMs,
    log: deps.log,
  });
  const team = createTeam({ ...repos, principals, inviteTtlDays: config.inviteTtlDays });
  const oauth = createOAuth({
    providers: createSignInProviders(config.oauth),
    box: deps.box,
    publicUrl: config.publicUrl,
    users: repos.users,
    identities: repos.identities,
    auth,
    team,
  });
  const devices = createDeviceCookies({ box: deps.box });
  return { auth, devices, team, oauth, apiKeys: createApiKeys(repos.apiKeys, principals, repos.workspaces) };
}
