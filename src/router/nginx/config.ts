import type { Upstream } from '../router.js';

/**
 * nginx's configuration, rendered from the route table. nginx serves the hot path itself: every web service with a
 * live instance, by Host and SNI, over keep-alive upstream connections. Everything else (static sites, suspended
 * services, www. redirects, ACME challenges, the 404 page) goes to the Node router behind it on loopback, which reads
 * the same table, so both always agree on what a name means.
 */
export interface NginxSite {
  serviceId: string;
  /** The apps-domain host and the verified custom domains that route to this service. */
  names: string[];
  upstreams: Upstream[];
}
export interface NginxLayout {
  prefix: string;
  pidFile: string;
  accessLog: string;
  errorLog: string;
  /** Where a name's certificate files are (undefined: the name has none and is served with the apps-domain pair). */
  certificateOf(name: string): { cert: string; key: string } | undefined;
  /** Every name with a certificate of its own, whatever it routes to. */
  certificateNames: string[];
  appsCertificate: { cert: string; key: string };
}
export interface NginxSettings {
  host: string;
  httpPort: number;
  /** undefined: no HTTPS listener. */
  httpsPort?: number;
  /** The port HTTP → HTTPS redirects name (a port forwarded from 443): httpsPort by default. */
  redirectPort?: number;
  /** The Node router on loopback: everything nginx does not answer itself. */
  fallbackPort: number;
  /** A loopback listener that answers the generation, so a reload is known to have taken effect. */
  statusPort: number;
  workers: number;
  /** The workers' user when nginx runs as root: one of its own, never the apps' (an app could signal them). */
  user?: string;
  timeouts: { headersMs: number; requestMs: number; keepAliveMs: number; upstreamMs: number };
}

/** How long an old worker may finish its requests after a reload (a WebSocket or a long download is cut then). */
export const WORKER_SHUTDOWN_MS = 10_000;

/** Names and addresses reach the file as they are: anything but these characters would be config syntax. */
export const SAFE_NAME = /^[a-z0-9-]+(\.[a-z0-9-]+)*$/;
const SAFE_ADDRESS = /^[0-9a-f.:]+$/i;
const seconds = (ms: number) => `${Math.max(1, Math.ceil(ms / 1000))}s`;

export function renderNginxConfig(
  generation: string,
  sites: NginxSite[],
  s: NginxSettings,
  files: NginxLayout,
): string {
  const listen = (port: number, extra = '') => `listen ${bracket(s.host)}:${port}${extra};`;
  const httpsListen = (extra = '') => (s.httpsPort ? listen(s.httpsPort, ` ssl http2${extra}`) : '');
  const certLines = (pair: { cert: string; key: string }) =>
    s.httpsPort ? `ssl_certificate ${pair.cert};\n    ssl_certificate_key ${pair.key};` : '';
  const redirectPort = s.redirectPort ?? s.httpsPort;
  const toFallback = 'location /.well-known/acme-challenge/ { proxy_pass http://slipway_fallback; }';

  const upstreams: string[] = [];
  const servers: string[] = [];
  const routed = new Set<string>();
  sites.forEach((site, i) => {
    const addresses = site.upstreams.filter((u) => SAFE_ADDRESS.test(u.host));
    const names = site.names.map((n) => n.toLowerCase()).filter((n) => SAFE_NAME.test(n));
    if (addresses.length === 0 || names.length === 0 || !/^[a-z0-9-]+$/.test(site.serviceId)) return;
    names.forEach((n) => routed.add(n));
    const group = `service_${i}`;
    upstreams.push(
      `upstream ${group} {\n${addresses.map((u) => `    server ${bracket(u.host)}:${u.port} max_fails=0;`).join('\n')}\n    keepalive 64;\n  }`,
    );
    const proxied = `set $slipway_service ${site.serviceId};
    access_log ${files.accessLog} slipway;
    ${toFallback}
    location / { proxy_pass http://${group}; }`;
    const own = names.filter((n) => s.httpsPort && files.certificateOf(n));
    const shared = names.filter((n) => !own.includes(n));
    if (shared.length)
      servers.push(`server {
    ${listen(s.httpPort)}
    ${httpsListen()}
    server_name ${shared.join(' ')};
    ${certLines(files.appsCertificate)}
    ${proxied}
  }`);
    // A name with its own certificate: HTTPS only; plain HTTP is redirected, except ACME's challenges.
    for (const name of own)
      servers.push(`server {
    ${listen(s.httpPort)}
    server_name ${name};
    ${toFallback}
    location / { return 301 https://$host${redirectPort === 443 ? '' : `:${redirectPort}`}$request_uri; }
  }
  server {
    ${httpsListen()}
    server_name ${name};
    ${certLines(files.certificateOf(name)!)}
    ${proxied}
  }`);
  });

  // Names with a certificate that nginx does not route itself (a static site's domain, a www. twin that redirects):
  // nginx terminates TLS with their own certificate and hands them to the Node router, which redirects plain HTTP.
  if (s.httpsPort)
    for (const name of files.certificateNames.filter((n) => SAFE_NAME.test(n) && !routed.has(n)))
      servers.push(`server {
    ${httpsListen()}
    server_name ${name};
    ${certLines(files.certificateOf(name)!)}
    location / { proxy_pass http://slipway_fallback; }
  }`);

  return `# Written by Slipway (src/router/nginx/config.ts), generation ${generation}. Checked with nginx -t before each reload.
worker_processes ${s.workers};
${s.user ? `user ${s.user};` : ''}
worker_shutdown_timeout ${WORKER_SHUTDOWN_MS / 1000}s;
pid ${files.pidFile};
error_log ${files.errorLog} warn;
events { worker_connections 4096; }
http {
  access_log off;
  server_tokens off;
  client_body_temp_path ${files.prefix}/tmp/body;
  proxy_temp_path ${files.prefix}/tmp/proxy;
  fastcgi_temp_path ${files.prefix}/tmp/fastcgi;
  uwsgi_temp_path ${files.prefix}/tmp/uwsgi;
  scgi_temp_path ${files.prefix}/tmp/scgi;
  client_header_timeout ${seconds(s.timeouts.headersMs)};
  client_body_timeout ${seconds(s.timeouts.requestMs)};
  keepalive_timeout ${seconds(s.timeouts.keepAliveMs)};
  client_max_body_size 0;
  proxy_http_version 1.1;
  proxy_request_buffering off;
  proxy_max_temp_file_size 0;
  proxy_connect_timeout 5s;
  proxy_read_timeout ${seconds(s.timeouts.upstreamMs)};
  proxy_send_timeout ${seconds(s.timeouts.upstreamMs)};
  proxy_next_upstream error;
  proxy_next_upstream_tries 2;
  map $http_upgrade $slipway_connection { default upgrade; '' ''; }
  map "$http_host:$scheme" $slipway_forwarded_port { "~:(?<p>[0-9]+):https?$" $p; "~:https$" 443; default 80; }
  proxy_set_header Host $http_host;
  proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
  proxy_set_header X-Forwarded-Proto $scheme;
  proxy_set_header X-Forwarded-Host $http_host;
  proxy_set_header X-Forwarded-Port $slipway_forwarded_port;
  proxy_set_header Upgrade $http_upgrade;
  proxy_set_header Connection $slipway_connection;
  log_format slipway escape=json '{"service":"$slipway_service","method":"$request_method","path":"$request_uri",'
    '"host":"$host","status":$status,"seconds":$request_time,"bytes":$bytes_sent,"upstream":"$upstream_addr"}';
  ssl_protocols TLSv1.2 TLSv1.3;
  ssl_session_cache shared:slipway:10m;

  upstream slipway_fallback {
    server 127.0.0.1:${s.fallbackPort};
    keepalive 64;
  }
  ${upstreams.join('\n  ')}

  server {
    listen 127.0.0.1:${s.statusPort};
    location = /generation { return 200 "${generation}"; }
  }
  server {
    ${listen(s.httpPort, ' default_server')}
    ${httpsListen(' default_server')}
    ${certLines(files.appsCertificate)}
    set $slipway_service "";
    location / { proxy_pass http://slipway_fallback; }
  }
  ${servers.join('\n  ')}
}
`;
}

const bracket = (host: string) => (host.includes(':') ? `[${host}]` : host);
