import type { Upstream } from '../types.js';

/**
 * nginx's configuration, rendered from the route table. nginx serves the hot path itself: every web service, by Host
 * and SNI, over keep-alive upstream connections. Everything else (static sites, suspended services, www. redirects,
 * ACME challenges, the 404 page) goes to the Node router behind it on loopback, which reads the same table, so both
 * always agree on what a name means.
 *
 * Neither the instances' addresses nor the names are in the file: Lua (Debian's libnginx-mod-http-lua) reads them
 * from shared dicts that Slipway replaces over a unix socket, so a roll-over or a new service changes no
 * configuration and needs no reload (a reload closes every tenant's idle client connections). Only a name with a
 * certificate of its own has a server block (nginx picks a certificate by server block). A service with no address
 * in the dict goes to the Node router, which answers as it would for any service without a healthy instance.
 */
export interface NginxSite {
  serviceId: string;
  /** The apps-domain host and the verified custom domains that route to this service. */
  names: string[];
}
export interface NginxLayout {
  prefix: string;
  /** The unix socket (in the 0700 prefix) Slipway replaces the upstream addresses through. */
  controlSocket: string;
  /** The addresses and names as last sent, which a starting or reloading nginx loads (renderRoutes). */
  upstreamsFile: string;
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
  workers: number;
  /** load_module paths: NDK and the Lua module (process.ts: nginxLuaModules). */
  modules: string[];
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
  // RFC 9112 §3.2.2: nginx routes an absolute-form target (`GET http://b…/`) by its own host; a Host naming another is
  // refused, so no app (nor the Node router behind) is handed a Host other than the name the request was routed by.
  const sameHost = 'if ($slipway_host_mismatch) { return 400; }';

  const servers: string[] = [];
  const routed = new Set<string>();
  for (const site of sites) {
    const names = safeNames(site.names);
    if (names.length === 0 || !SAFE_ID.test(site.serviceId)) continue;
    names.forEach((n) => routed.add(n));
    const proxied = `${sameHost}
    set $slipway_service ${site.serviceId};
    access_log ${files.accessLog} slipway if=$slipway_logged;
    ${toFallback}
    location / { proxy_pass http://slipway_services; }`;
    // The other names are the default server's, by the names dict.
    const own = names.filter((n) => s.httpsPort && files.certificateOf(n));
    // A name with its own certificate: HTTPS only; plain HTTP is redirected, except ACME's challenges.
    for (const name of own)
      servers.push(`server {
    ${listen(s.httpPort)}
    server_name ${name};
    ${sameHost}
    ${toFallback}
    location / { return 301 https://$host${redirectPort === 443 ? '' : `:${redirectPort}`}$request_uri; }
  }
  server {
    ${httpsListen()}
    server_name ${name};
    ${certLines(files.certificateOf(name)!)}
    ${proxied}
  }`);
  }

  // Names with a certificate that nginx does not route itself (a static site's domain, a www. twin that redirects):
  // nginx terminates TLS with their own certificate and hands them to the Node router, which redirects plain HTTP.
  if (s.httpsPort)
    for (const name of files.certificateNames.filter((n) => SAFE_NAME.test(n) && !routed.has(n)))
      servers.push(`server {
    ${httpsListen()}
    server_name ${name};
    ${certLines(files.certificateOf(name)!)}
    ${sameHost}
    location / { proxy_pass http://slipway_fallback; }
  }`);

  return `# Written by Slipway (src/router/nginx/config.ts), generation ${generation}. Checked with nginx -t before each reload.
${s.modules.map((m) => `load_module ${m};`).join('\n')}
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
  # The second value is sent as Keep-Alive: timeout=N, so clients (Node's agent among them) stop reusing a
  # connection before nginx closes it, instead of sending a request into the close.
  keepalive_timeout ${seconds(s.timeouts.keepAliveMs)} ${seconds(s.timeouts.keepAliveMs)};
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
  # $host is the request line's host when the target is in absolute form, else Host's (lowercased, without port or
  # trailing dot). A Host that names another host is a mismatch (each server answers it 400); none at all (HTTP/1.0)
  # is not, and the app is then told $host.
  map "$host $http_host" $slipway_host_mismatch { "~*^(\\S*) (\\1\\.?(:[0-9]+)?)?$" 0; default 1; }
  map $http_host $slipway_host { "" $host; default $http_host; }
  map "$slipway_host:$scheme" $slipway_forwarded_port { "~:(?<p>[0-9]+):https?$" $p; "~:https$" 443; default 80; }
  # RFC 7239: this hop's element after the client's (an app takes the last), IPv6 bracketed and quoted.
  map $remote_addr $slipway_forwarded_for { "~:" "\\"[$remote_addr]\\""; default $remote_addr; }
  map $http_forwarded $slipway_forwarded_before { "" ""; default "$http_forwarded, "; }
  proxy_set_header Host $slipway_host;
  proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
  proxy_set_header X-Forwarded-Proto $scheme;
  proxy_set_header X-Forwarded-Host $slipway_host;
  proxy_set_header X-Forwarded-Port $slipway_forwarded_port;
  proxy_set_header X-Real-IP $remote_addr;
  proxy_set_header Forwarded "\${slipway_forwarded_before}for=$slipway_forwarded_for;host=\\"$slipway_host\\";proto=$scheme";
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
  ${dynamicUpstreams(s.fallbackPort, files, generation)}
  # The Node router logs what it answers itself (a service without an instance), so nginx does not log it twice.
  map $upstream_addr $slipway_logged { "127.0.0.1:${s.fallbackPort}" 0; default 1; }

  # Every name without a certificate of its own: its service from the names dict ("" goes to the Node router).
  server {
    ${listen(s.httpPort, ' default_server')}
    ${httpsListen(' default_server')}
    ${certLines(files.appsCertificate)}
    ${sameHost}
    set_by_lua_block $slipway_service { return ngx.shared.slipway_names:get(ngx.var.host) or "" }
    access_log ${files.accessLog} slipway if=$slipway_logged;
    ${toFallback}
    location / { proxy_pass http://slipway_services; }
  }
  ${servers.join('\n  ')}
}
`;
}

const bracket = (host: string) => (host.includes(':') ? `[${host}]` : host);
const SAFE_ID = /^[a-z0-9-]+$/;

/** The names that may reach the file or the dicts as they are, lowercased (nginx's $host is). */
const safeNames = (names: string[]) => names.map((n) => n.toLowerCase()).filter((n) => SAFE_NAME.test(n));

/**
 * The routes file and the control socket's body: a line per service with addresses, `<serviceId> <host>:<port> …`,
 * and one per name of such a service, `@<name> <serviceId>`. A service without an address is left out, names too:
 * an unknown name goes to the Node router as such a service would, and the dicts hold only what runs (a tenant's
 * thousands of idle services or domains cannot fill them).
 */
export function renderRoutes(services: Array<{ serviceId: string; names: string[]; upstreams: Upstream[] }>): string {
  const lines: string[] = [];
  for (const s of services) {
    if (!SAFE_ID.test(s.serviceId)) continue;
    const addresses = s.upstreams.filter((u) => SAFE_ADDRESS.test(u.host)).map((u) => `${u.host}:${u.port}`);
    if (!addresses.length) continue;
    lines.push(`${s.serviceId} ${addresses.join(' ')}\n`);
    for (const name of safeNames(s.names)) lines.push(`@${name} ${s.serviceId}\n`);
  }
  return lines.join('');
}

/**
 * The Lua half: one upstream whose balancer picks an address of $slipway_service from the shared dict (a retry, after
 * a kept-alive connection to a stopped instance fails, reads the dict again), and the control socket that replaces
 * the dict's whole content. The dict outlives reloads; a starting master loads the file.
 */
function dynamicUpstreams(fallbackPort: number, files: NginxLayout, generation: string): string {
  // What is gone is deleted first, then the rest set with safe_set: a full dict refuses an entry (counted in full)
  // instead of evicting one that another service routes by.
  const load = `local dicts = { [""] = ngx.shared.slipway_upstreams, ["@"] = ngx.shared.slipway_names }
      local wanted = { [""] = {}, ["@"] = {} }
      for line in text:gmatch("[^\\n]+") do
        local at, key, value = line:match("^(@?)(%S+)%s+(.+)$")
        if key then wanted[at][key] = value end
      end
      local full = 0
      for at, dict in pairs(dicts) do
        for _, key in ipairs(dict:get_keys(0)) do if not wanted[at][key] then dict:delete(key) end end
        for key, value in pairs(wanted[at]) do
          if dict:get(key) ~= value and not dict:safe_set(key, value) then full = full + 1 end
        end
      end
      if full > 0 then ngx.log(ngx.ERR, "slipway: the route dicts are full; entries left out: ", full) end`;
  return `lua_shared_dict slipway_upstreams 8m;
  lua_shared_dict slipway_names 8m;
  lua_shared_dict slipway_turns 1m;
  init_by_lua_block {
    local f = io.open(${JSON.stringify(files.upstreamsFile)})
    if f then
      local text = f:read("*a")
      f:close()
      ${load}
    end
  }
  upstream slipway_services {
    server 127.0.0.1:${fallbackPort};
    balancer_by_lua_block {
      local balancer = require "ngx.balancer"
      local service = ngx.var.slipway_service
      local peers = {}
      for host, port in (ngx.shared.slipway_upstreams:get(service) or ""):gmatch("(%S+):(%d+)") do
        peers[#peers + 1] = { host, tonumber(port) }
      end
      if #peers == 0 then
        -- No address (or no service: a name nobody routes): the Node router answers.
        local ok, err = balancer.set_current_peer("127.0.0.1", ${fallbackPort})
        if not ok then
          ngx.log(ngx.ERR, "slipway balancer: ", err)
          return ngx.exit(502)
        end
        return
      end
      if not ngx.ctx.slipway_pick then balancer.set_more_tries(1) end
      -- Round robin per service across every worker (a dict of its own, which replacing addresses leaves alone).
      ngx.ctx.slipway_pick = (ngx.ctx.slipway_pick or ngx.shared.slipway_turns:incr(service, 1, 0)) + 1
      local peer = peers[ngx.ctx.slipway_pick % #peers + 1]
      local ok, err = balancer.set_current_peer(peer[1], peer[2])
      if not ok then
        ngx.log(ngx.ERR, "slipway balancer: ", err)
        return ngx.exit(502)
      end
    }
    keepalive 64;
  }
  server {
    listen unix:${files.controlSocket};
    access_log off;
    # Which configuration the workers that accept new connections run: a reload is known to have taken effect.
    location = /generation { return 200 "${generation}"; }
    location = /upstreams {
      client_body_buffer_size 8m;
      client_max_body_size 8m;
      content_by_lua_block {
        ngx.req.read_body()
        local text = ngx.req.get_body_data() or ""
        ${load}
        ngx.say(full == 0 and "ok" or "full " .. full)
      }
    }
  }`;
}
