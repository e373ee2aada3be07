import { createAppAuth } from '@octokit/auth-app';
import { Octokit } from '@octokit/core';
import { paginateRest } from '@octokit/plugin-paginate-rest';
import { verify } from '@octokit/webhooks-methods';
import type { GitHubAppConfig } from '../model/settings.js';

/** An installation as Slipway keeps it. */
export interface GitHubInstallation {
  id: string;
  account: string;
  accountType: string;
  repositorySelection: string;
}
export interface GitHubRepository {
  id: number;
  fullName: string;
  private: boolean;
  defaultBranch: string;
  cloneUrl: string;
  htmlUrl: string;
}
export type CommitState = 'pending' | 'success' | 'failure' | 'error';

/** The code-host port: core sees only this, never Octokit. */
export interface CodeHost {
  installation(installationId: string): Promise<GitHubInstallation>;
  /** An installation token, cached until shortly before it expires. */
  installationToken(installationId: string): Promise<string>;
  /** Every repository the installation reaches (GitHub's pages, followed). */
  repositories(installationId: string): Promise<GitHubRepository[]>;
  setStatus(
    installationId: string,
    input: { owner: string; repo: string; sha: string; state: CommitState; targetUrl: string; description: string },
  ): Promise<void>;
  /**
   * The installations the user behind a setup callback's `code` can reach (the App's OAuth web flow, then
   * `GET /user/installations`): what proves an installation id in the callback is theirs.
   */
  userInstallations(code: string): Promise<string[]>;
  /** Checks `X-Hub-Signature-256` over the raw body, in constant time. */
  verify(rawBody: string, signature: string): Promise<boolean>;
}

/** A token is renewed this long before GitHub says it expires (a clone must not outlive it). */
const TOKEN_MARGIN_MS = 5 * 60_000;
const PaginatingOctokit = Octokit.plugin(paginateRest);

/** The GitHub App through Octokit: RS256 App JWTs for `/app/*`, installation tokens for the rest. */
export function createGitHubApp(options: Omit<GitHubAppConfig, 'slug'> & { now?: () => number }): CodeHost {
  const now = options.now ?? Date.now;
  const app = new Octokit({
    authStrategy: createAppAuth,
    auth: { appId: options.appId, privateKey: options.privateKey },
    baseUrl: options.apiUrl,
  });
  const tokens = new Map<string, { token: Promise<string>; expiresAt: number }>();

  async function installationToken(installationId: string): Promise<string> {
    const cached = tokens.get(installationId);
    if (cached && cached.expiresAt - TOKEN_MARGIN_MS > now()) return cached.token;
    const entry = { token: Promise.resolve(''), expiresAt: Number.POSITIVE_INFINITY };
    entry.token = (async () => {
      const auth = (await app.auth({
        type: 'installation',
        installationId: Number(installationId),
        refresh: true,
      })) as {
        token: string;
        expiresAt: string;
      };
      entry.expiresAt = Date.parse(auth.expiresAt);
      return auth.token;
    })();
    entry.token.catch(() => tokens.delete(installationId));
    tokens.set(installationId, entry);
    return entry.token;
  }
  const asInstallation = async (installationId: string) =>
    new PaginatingOctokit({ auth: await installationToken(installationId), baseUrl: options.apiUrl });

  return {
    async installation(installationId) {
      const { data } = await app.request('GET /app/installations/{installation_id}', {
        installation_id: Number(installationId),
      });
      const account = data.account as { login?: string; slug?: string; type?: string } | null;
      return {
        id: String(data.id),
        account: account?.login ?? account?.slug ?? '',
        accountType: account?.type ?? 'Organization',
        repositorySelection: data.repository_selection,
      };
    },
    installationToken,
    async repositories(installationId) {
      const octokit = await asInstallation(installationId);
      const repos = await octokit.paginate('GET /installation/repositories', { per_page: 100 });
      return repos.map((r) => ({
        id: Number(r.id),
        fullName: r.full_name,
        private: r.private,
        defaultBranch: r.default_branch,
        cloneUrl: r.clone_url,
        htmlUrl: r.html_url,
      }));
    },
    async setStatus(installationId, input) {
      const octokit = await asInstallation(installationId);
      await octokit.request('POST /repos/{owner}/{repo}/statuses/{sha}', {
        owner: input.owner,
        repo: input.repo,
        sha: input.sha,
        state: input.state,
        target_url: input.targetUrl,
        description: input.description.slice(0, 140),
        context: 'slipway',
      });
    },
    async userInstallations(code) {
      const res = await fetch(`${options.webUrl}/login/oauth/access_token`, {
        method: 'POST',
        headers: { accept: 'application/json', 'content-type': 'application/json' },
        body: JSON.stringify({ client_id: options.clientId, client_secret: options.clientSecret, code }),
        signal: AbortSignal.timeout(15_000),
      });
      // GitHub answers a bad code with 200 and an `error`.
      const body = (await res.json().catch(() => ({}))) as { access_token?: string; error?: string };
      if (!res.ok || !body.access_token) throw new Error(body.error ?? `GitHub answered ${res.status}`);
      const user = new PaginatingOctokit({ auth: body.access_token, baseUrl: options.apiUrl });
      const installations = await user.paginate('GET /user/installations', { per_page: 100 });
      return installations.map((i) => String(i.id));
    },
    verify: (rawBody, signature) => verify(options.webhookSecret, rawBody, signature).catch(() => false),
  };
}
