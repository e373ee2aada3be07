import { AppError, notFound } from '../../lib/errors.js';
import { isPublicAddress, literalAddress } from '../../lib/ip-ranges.js';
import type { SecretBox } from '../../lib/secret-box.js';
import type { MetricsStreamProvider } from '../../model/enums.js';
import type { MetricsStreamRepo, MetricsStreamRow } from '../../store/repos/metrics-streams.js';

/** The stream as the API may show it: never the token. */
export type MetricsStream = Omit<MetricsStreamRow, 'sealedToken'>;
export interface MetricsStreamInput {
  provider?: MetricsStreamProvider;
  url?: string;
  /** Omitted: the stored one stays; '': none. */
  token?: string;
}

const invalid = (field: string, message: string) => new AppError('validation_failed', message, [{ field, message }]);
const shown = ({ sealedToken: _t, ...row }: MetricsStreamRow): MetricsStream => row;

/**
 * Render's metrics stream settings (PUT/GET/DELETE /v1/metrics-stream/:ownerId): one OTLP/HTTP endpoint per
 * workspace, its token sealed and never shown again. The exporter (exporter.ts) reads them at each export.
 */
export function createMetricsStreamSettings(deps: {
  repo: MetricsStreamRepo;
  box: SecretBox;
  /** SLIPWAY_METRICS_STREAM_ALLOW_PRIVATE: URLs may name loopback and private addresses. */
  allowPrivate: boolean;
}) {
  const { repo, box } = deps;

  function checkUrl(raw: string): string {
    let url: URL;
    try {
      url = new URL(raw.trim());
    } catch {
      throw invalid('url', `url must be an http(s) URL, such as https://otlp.example.com, got "${raw}"`);
    }
    if (url.protocol !== 'https:' && url.protocol !== 'http:') throw invalid('url', 'url must be http:// or https://');
    if (url.username || url.password) throw invalid('url', 'url must not hold credentials: give them as the token');
    const literal = literalAddress(url.hostname);
    if (literal && !deps.allowPrivate && !isPublicAddress(literal))
      throw invalid('url', `${literal} is a private or reserved address: metrics streams only reach public addresses`);
    return url.toString();
  }
  function sealToken(token: string | undefined, stored: string | null | undefined): string | null {
    if (token === undefined) return stored ?? null;
    if (token === '') return null;
    if (!/^[\x21-\x7e]+$/.test(token)) throw invalid('token', 'token must be printable ASCII without spaces');
    return box.seal(token);
  }

  return {
    /** 404 when the workspace has none. */
    async get(workspaceId: string): Promise<MetricsStream> {
      const row = await repo.get(workspaceId);
      if (!row) throw notFound('metrics stream');
      return shown(row);
    },
    /** Creates or updates the workspace's stream: a URL is needed once; the provider is CUSTOM unless given. */
    async put(workspaceId: string, input: MetricsStreamInput): Promise<MetricsStream> {
      const stored = await repo.get(workspaceId);
      const url = input.url !== undefined ? checkUrl(input.url) : stored?.url;
      if (!url) throw invalid('url', 'url is required to create a metrics stream');
      const provider = input.provider ?? stored?.provider ?? 'CUSTOM';
      return shown(
        await repo.put(workspaceId, { provider, url, sealedToken: sealToken(input.token, stored?.sealedToken) }),
      );
    },
    /** 404 when there was none. */
    async delete(workspaceId: string): Promise<void> {
      if (!(await repo.delete(workspaceId))) throw notFound('metrics stream');
    },
  };
}
export type MetricsStreamSettings = ReturnType<typeof createMetricsStreamSettings>;
