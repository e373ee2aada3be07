import { AppError, notFound } from '../../lib/errors.js';
import { newId } from '../../lib/ids.js';
import { isPublicAddress, literalAddress } from '../../lib/ip-ranges.js';
import type { SecretBox } from '../../lib/secret-box.js';
import type { LogStreamSetting } from '../../model/enums.js';
import { parseEndpoint, TOKEN_PATTERN } from '../../integrations/syslog.js';
import type { Repos } from '../../store/repos/index.js';
import type { LogStreamOverrideRow, LogStreamRow, OverrideQuery } from '../../store/repos/log-streams.js';

/** The workspace's setting as the API may show it: never the token. */
export type OwnerLogStream = Omit<LogStreamRow, 'sealedToken' | 'cursor'>;
export type LogStreamOverride = Omit<LogStreamOverrideRow, 'sealedToken' | 'cursor'>;

export interface OwnerInput {
  endpoint?: string;
  /** Omitted: the stored one stays; '': none. */
  token?: string;
  preview: LogStreamSetting;
}
export interface OverrideInput {
  endpoint?: string;
  token?: string;
  setting: LogStreamSetting;
}

const invalid = (field: string, message: string) => new AppError('validation_failed', message, [{ field, message }]);
const shownOwner = ({ sealedToken: _t, cursor: _c, ...row }: LogStreamRow): OwnerLogStream => row;
const shownOverride = ({ sealedToken: _t, cursor: _c, ...row }: LogStreamOverrideRow): LogStreamOverride => row;

/**
 * Render's log stream settings: a workspace's syslog endpoint and per-resource overrides (another endpoint, or `drop`).
 * Tokens are sealed with the secret box and never shown again. A new stream starts at the newest log entry: it
 * forwards what is written from then on, not the history. `changed` tells the forwarder (forwarder.ts) at once.
 */
export function createLogStreamSettings(deps: {
  repos: Pick<Repos, 'logStreams' | 'logs' | 'services' | 'datastores'>;
  box: SecretBox;
  /** SLIPWAY_LOG_STREAM_ALLOW_PRIVATE: endpoints may be loopback or private addresses. */
  allowPrivate: boolean;
  changed(): void;
}) {
  const { repos, box } = deps;
  const repo = repos.logStreams;

  function checkEndpoint(raw: string): string {
    const parsed = parseEndpoint(raw);
    if (!parsed) throw invalid('endpoint', `endpoint must be HOST:PORT (e.g. logs.example.com:6514), got "${raw}"`);
    const literal = literalAddress(parsed.host);
    if (literal && !deps.allowPrivate && !isPublicAddress(literal))
      throw invalid('endpoint', `${literal} is a private or reserved address: log streams only reach public addresses`);
    return raw.trim();
  }
  function sealToken(token: string | undefined, stored: string | null | undefined): string | null {
    if (token === undefined) return stored ?? null;
    if (token === '') return null;
    if (!TOKEN_PATTERN.test(token))
      throw invalid('token', 'token must be 1–256 printable ASCII characters without space, =, @, ] or "');
    return box.seal(token);
  }
  const done = <T>(value: T): T => {
    deps.changed();
    return value;
  };

  return {
    /** 404 when the workspace has no log stream. */
    async getOwner(workspaceId: string): Promise<OwnerLogStream> {
      const row = await repo.getOwner(workspaceId);
      if (!row) throw notFound('log stream');
      return shownOwner(row);
    },
    /** Creates or replaces the workspace's setting; an endpoint is needed once, then kept unless given again. */
    async putOwner(workspaceId: string, input: OwnerInput): Promise<OwnerLogStream> {
      const stored = await repo.getOwner(workspaceId);
      const endpoint = input.endpoint !== undefined ? checkEndpoint(input.endpoint) : stored?.endpoint;
      if (!endpoint) throw invalid('endpoint', 'endpoint is required to create a log stream');
      const sealedToken = sealToken(input.token, stored?.sealedToken);
      const row = await repo.putOwner(
        workspaceId,
        { endpoint, sealedToken, preview: input.preview },
        await repos.logs.maxId(),
      );
      return done(shownOwner(row));
    },
    async deleteOwner(workspaceId: string): Promise<void> {
      if (!(await repo.deleteOwner(workspaceId))) throw notFound('log stream');
      deps.changed();
    },
    /** The workspace of a service or datastore; 404 when there is none (the caller checks the workspace). */
    async resourceWorkspace(resourceId: string): Promise<string> {
      const owner =
        (await repos.services.get(resourceId))?.workspaceId ?? (await repos.datastores.get(resourceId))?.workspaceId;
      if (!owner) throw notFound('resource');
      return owner;
    },
    async getOverride(resourceId: string): Promise<LogStreamOverride> {
      const row = await repo.getOverride(resourceId);
      if (!row) throw notFound('log stream override');
      return shownOverride(row);
    },
    listOverrides: async (q: OverrideQuery): Promise<LogStreamOverride[]> =>
      (await repo.listOverrides(q)).map(shownOverride),
    /**
     * Render's rule: `send` needs an endpoint (given, or kept from a `send` override), `drop` takes none. The caller
     * checked that the resource is in `workspaceId`.
     */
    async putOverride(workspaceId: string, resourceId: string, input: OverrideInput): Promise<LogStreamOverride> {
      const stored = await repo.getOverride(resourceId);
      let endpoint: string | null = null;
      let sealedToken: string | null = null;
      if (input.setting === 'drop') {
        if (input.endpoint !== undefined || input.token !== undefined)
          throw invalid('endpoint', 'an override that drops logs takes no endpoint or token');
      } else {
        endpoint = input.endpoint !== undefined ? checkEndpoint(input.endpoint) : (stored?.endpoint ?? null);
        if (!endpoint) throw invalid('endpoint', 'endpoint is required when setting is send');
        sealedToken = sealToken(input.token, stored?.setting === 'send' ? stored.sealedToken : null);
      }
      const row = await repo.putOverride(
        { id: newId('logStream'), workspaceId, resourceId, cursor: await repos.logs.maxId() },
        { setting: input.setting, endpoint, sealedToken },
      );
      return done(shownOverride(row));
    },
    async deleteOverride(resourceId: string): Promise<void> {
      if (!(await repo.deleteOverride(resourceId))) throw notFound('log stream override');
      deps.changed();
    },
  };
}
export type LogStreamSettings = ReturnType<typeof createLogStreamSettings>;
