import { AppError, badRequest, conflict, forbidden } from '../../lib/errors.js';
import type { SecretBox } from '../../lib/secret-box.js';
import type { GitHubAppConfig } from '../../model/settings.js';
import { GITHUB_APP_SETTINGS } from '../../model/settings.js';
import type { CodeHost, GitHubRepository } from '../../integrations/github.js';
import type { GitHubInstallationRow, GitHubRepo } from '../../store/repos/github.js';

/** An install link stays good this long. */
const STATE_TTL_MS = 15 * 60_000;
const REACH_TTL_MS = 60_000;

export const notConfigured = () =>
  new AppError(
    'not_configured',
    `the GitHub App is not configured: set ${GITHUB_APP_SETTINGS.join(', ')} (docs/github-and-sign-in.md, "GitHub pushes")`,
  );

/** `host/owner/repo` of a repo URL on GitHub's web host, lowercased, without `.git`; undefined for other hosts. */
export function githubRepoKey(repoUrl: string, webUrl: string): string | undefined {
  let url: URL;
  let web: URL;
  try {
    url = new URL(repoUrl);
    web = new URL(webUrl);
  } catch {
    return undefined;
  }
  if (url.host.toLowerCase() !== web.host.toLowerCase() || url.username || url.password) return undefined;
  const parts = url.pathname
    .replace(/\.git\/?$/i, '')
    .replace(/\/+$/, '')
    .split('/')
    .filter(Boolean);
  if (parts.length !== 2) return undefined;
  return `${url.host}/${parts[0]}/${parts[1]}`.toLowerCase();
}

/**
 * The GitHub App as a workspace sees it (docs/github-and-sign-in.md, "GitHub pushes"): the install link and its callback, the status, the
 * repositories, and the token a clone of one of them uses. Unconfigured, everything but `configured` is a 501.
 */
export function createGitHub(deps: {
  app?: { host: CodeHost; config: GitHubAppConfig };
  repo: GitHubRepo;
  box: SecretBox;
  now?: () => number;
}) {
  const now = deps.now ?? Date.now;
  const app = () => {
    if (!deps.app) throw notConfigured();
    return deps.app;
  };
  /** The workspace's installation, when it may be used (linked, not suspended). */
  async function usable(workspaceId: string): Promise<GitHubInstallationRow | undefined> {
    if (!deps.app) return undefined;
    const row = await deps.repo.installationOf(workspaceId);
    return row && !row.suspended ? row : undefined;
  }

  /** Repositories each installation reaches, for a minute: GitHub sends pushes of those only. */
  const reach = new Map<string, { at: number; names: Promise<Set<string>> }>();
  async function covers(row: GitHubInstallationRow, key: string): Promise<boolean> {
    const [, owner, name] = key.split('/') as [string, string, string];
    if (row.repositorySelection === 'all') return owner === row.account.toLowerCase();
    let known = reach.get(row.installationId);
    if (!known || known.at < now() - REACH_TTL_MS) {
      const names = app()
        .host.repositories(row.installationId)
        .then((repos) => new Set(repos.map((r) => r.fullName.toLowerCase())))
        .catch(() => new Set<string>()); // unknown: the service is polled meanwhile
      known = { at: now(), names };
      reach.set(row.installationId, known);
    }
    return (await known.names).has(`${owner}/${name}`);
  }

  return {
    configured: deps.app !== undefined,
    /** GitHub's installation page, with a sealed state naming the workspace and when the link expires. */
    installUrl(workspaceId: string): string {
      const { config } = app();
      const state = Buffer.from(deps.box.seal(JSON.stringify({ w: workspaceId, e: now() + STATE_TTL_MS }))).toString(
        'base64url',
      );
      return `${config.webUrl}/apps/${encodeURIComponent(config.slug)}/installations/new?state=${state}`;
    },
    /** The workspace a callback's state was made for; undefined when it was altered or has expired. */
    stateWorkspace(state: string): string | undefined {
      try {
        const { w, e } = JSON.parse(deps.box.open(Buffer.from(state, 'base64url').toString())) as {
          w: string;
          e: number;
        };
        if (typeof w === 'string' && typeof e === 'number' && e > now()) return w;
      } catch {
        // a state this Slipway did not seal
      }
      return undefined;
    },
    /**
     * GitHub's setup callback: links the installation GitHub names to the workspace the state was made for (the
     * caller's role there already checked); 400 for a bad state, 409 when the installation is another workspace's.
     * Without an installation id (GitHub's `setup_action=request`) nothing is linked yet.
     */
    async link(
      workspaceId: string | undefined,
      stated: string | undefined,
      installationId: string | undefined,
      code: string | undefined,
    ): Promise<GitHubInstallationRow | undefined> {
      const { host } = app();
      if (!workspaceId || stated !== workspaceId)
        throw badRequest('the install link was altered or has expired: start again from GET /v1/github/install');
      if (!installationId) return undefined; // requested by an org member: it waits for an owner's approval
      // The installation id in the URL is only a claim (anyone can type one): the user GitHub sent back must reach it.
      if (!code)
        throw badRequest(
          'GitHub sent no authorization code: turn on "Request user authorization (OAuth) during installation" in the App',
        );
      const theirs = await host.userInstallations(code).catch((err: Error) => {
        throw badRequest(`GitHub did not accept the authorization code: ${err.message}`);
      });
      if (!theirs.includes(installationId))
        throw forbidden(`installation ${installationId} is not one your GitHub account can reach`);
      const found = await host.installation(installationId).catch(() => {
        throw badRequest(`GitHub knows no installation ${installationId} of this App`);
      });
      const row = { installationId: found.id, workspaceId, account: found.account, accountType: found.accountType };
      const linked = await deps.repo.link({ ...row, repositorySelection: found.repositorySelection });
      if (!linked) throw conflict('this GitHub installation is linked to another workspace');
      return (await deps.repo.installation(found.id))!;
    },
    async status(workspaceId: string) {
      app();
      const row = await deps.repo.installationOf(workspaceId);
      return {
        configured: true,
        installed: row !== undefined,
        ...(row
          ? {
              installationId: row.installationId,
              account: { login: row.account, type: row.accountType },
              repositorySelection: row.repositorySelection,
              suspended: row.suspended,
            }
          : {}),
      };
    },
    async repositories(workspaceId: string): Promise<GitHubRepository[]> {
      const { host } = app();
      const row = await usable(workspaceId);
      if (!row)
        throw conflict('the GitHub App is not installed for this workspace (or is suspended): GET /v1/github/install');
      return host.repositories(row.installationId).catch((err: { status?: number; message?: string }) => {
        if (err.status === 401 || err.status === 404)
          throw conflict('GitHub no longer knows this installation: install the App again (GET /v1/github/install)');
        throw new AppError('unavailable', `GitHub could not be reached: ${err.message ?? 'unknown error'}`);
      });
    },
    /** The installation token a clone of `service.repo` uses: only for the service's own workspace's installation. */
    async tokenFor(service: { workspaceId: string; repo: string | null }): Promise<string | undefined> {
      if (!deps.app || !service.repo || !githubRepoKey(service.repo, deps.app.config.webUrl)) return undefined;
      const row = await usable(service.workspaceId);
      return row ? deps.app.host.installationToken(row.installationId) : undefined;
    },
    /**
     * Whether GitHub tells Slipway of this service's repo's pushes (the workspace's installation reaches the repo):
     * then it is not polled.
     */
    async pushes(service: { workspaceId: string; repo: string | null }): Promise<boolean> {
      const key = deps.app && service.repo ? githubRepoKey(service.repo, deps.app.config.webUrl) : undefined;
      const row = key ? await usable(service.workspaceId) : undefined;
      return key !== undefined && row !== undefined && (await covers(row, key));
    },
    usable,
  };
}
export type GitHub = ReturnType<typeof createGitHub>;
