import type { ConnectionTimeouts } from '../lib/http-timeouts.js';
import type { Logger } from '../lib/logger.js';
import type { CompiledRules } from './static-rules.js';
import type { CertificateStore } from './tls.js';

export interface Upstream {
  host: string;
  port: number;
  /** The instance listening there (labels its request log entries). */
  instanceId?: string;
}
export type RouteTarget =
  | { kind: 'instances'; serviceId: string; upstreams: Upstream[] } // web service; [] = nothing live
  | { kind: 'static'; serviceId: string; root: string; rules?: CompiledRules } // static site: files from root
  | { kind: 'suspended'; serviceId: string }
  | { kind: 'maintenance'; serviceId: string; uri: string } // maintenance mode: the page, or a redirect to `uri`
  | { kind: 'redirect'; to: string }; // a custom domain's www./apex twin: 301 to this host, same path
export interface RequestRecord {
  serviceId: string;
  method: string;
  path: string;
  host: string;
  statusCode: number;
  durationMs: number;
  bytesOut: number;
  upstream?: string;
  instanceId?: string;
  /** Read from the access log at start: served while Slipway was down, logged in full (logs/requests.ts). */
  backlog?: true;
}
export interface RouterOptions {
  host: string;
  port: number; // port 0 = pick a free one
  resolve(hostname: string): RouteTarget | undefined; // hostname lowercased, port stripped; called per request, must be cheap
  onRequest?(record: RequestRecord): void; // called once per finished request
  /** Slipway's defaults when omitted. */
  timeouts?: RouterTimeouts;
  log?: Logger;
  /** An HTTPS listener beside the HTTP one; a name with a certificate there gets 301s from HTTP to HTTPS. */
  https?: {
    port: number; // 0 = pick a free one
    certificates: CertificateStore;
    /** The port HTTPS redirects name (a port forwarded from 443): the listener's by default. */
    redirectPort?: number;
  };
  /** ACME http-01: the key authorization for a token, served at /.well-known/acme-challenge/<token>. */
  acmeAnswer?(token: string): Promise<string | undefined>;
  /**
   * Behind nginx (router/nginx/): nginx terminates TLS and says so in X-Forwarded-Proto, so this router opens no HTTPS
   * listener of its own; `https` then only names the certificates and the port that redirects point at.
   */
  behindProxy?: boolean;
}
export interface RouterTimeouts extends ConnectionTimeouts {
  /** An app that sends nothing for this long: 504 (or, mid-response, the response is cut off). */
  upstreamTimeoutMs: number;
}
export interface Router {
  port: number;
  /** The HTTPS listener's port, when there is one. */
  httpsPort?: number;
  close(): Promise<void>;
}
