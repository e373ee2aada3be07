import { randomBytes } from 'node:crypto';
import { readFileSync, renameSync, rmSync, writeFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import type { Logger } from '../../lib/logger.js';
import { freePort } from '../../runtime/local/ports.js';
import { waitGone } from '../../runtime/local/proc.js';
import type { RequestRecord, RouteTarget, Upstream } from '../types.js';
import type { CertificateStore } from '../tls.js';
import { tailAccessLog } from '../access-log.js';
import { createUpdateLoop } from '../update-loop.js';
import {
  renderNginxConfig,
  renderRoutes,
  SAFE_NAME,
  WORKER_SHUTDOWN_MS,
  type NginxSettings,
  type NginxSite,
} from './config.js';
import {
  installConfig,
  nginxFiles,
  askControl,
  prepareDirs,
  readPorts,
  runningMaster,
  startMaster,
  writePorts,
  type NginxFiles,
} from './process.js';

export interface NginxPorts {
  http: number;
  https?: number;
}

/**
 * The ports nginx listens on: the configured ones, or (0) those of the master this data dir already runs, so an
 * adopting Slipway keeps serving where it did, or free ones.
 */
export async function nginxPorts(dataDir: string, wanted: { http: number; https?: number }): Promise<NginxPorts> {
  const files = nginxFiles(dataDir);
  const before = runningMaster(files) ? readPorts(files) : undefined;
  // Two free ports asked in turn can be the same one (the first was closed before the second was asked for).
  const taken = new Set([wanted.http, wanted.https, before?.http, before?.https]);
  const another = async () => {
    for (;;) {
      const port = await freePort();
      if (taken.has(port)) continue;
      taken.add(port);
      return port;
    }
  };
  return {
    http: wanted.http || before?.http || (await another()),
    ...(wanted.https !== undefined ? { https: wanted.https || before?.https || (await another()) } : {}),
  };
}

export interface NginxPlaneOptions {
  dataDir: string;
  binary: string;
  ports: NginxPorts;
  settings: Omit<NginxSettings, 'httpPort' | 'httpsPort'>;
  table: { snapshot(): Array<{ names: string[]; target: RouteTarget }> };
  certificates?: CertificateStore;
  onRequest(record: RequestRecord): void;
  /** nginx -t refused a configuration: the old one keeps serving. */
  onRejected(reason: string): void;
  log: Pick<Logger, 'info' | 'warn' | 'error'>;
}

/**
 * nginx as the data plane: a running master is adopted, otherwise one is started; every route table or certificate
 * change is rendered, checked with `nginx -t`, and applied by a graceful reload (SIGHUP). Until `start()` (after the
 * engine has re-adopted the live instances) an adopted nginx keeps its old configuration, so apps stay reachable
 * through a Slipway restart.
 */
export async function createNginxPlane(opts: NginxPlaneOptions) {
  const files = nginxFiles(opts.dataDir);
  prepareDirs(files);
  writeFileSync(path.join(files.certDir, 'apps.crt'), opts.certificates?.fallback.cert ?? '', { mode: 0o600 });
  writeFileSync(path.join(files.certDir, 'apps.key'), opts.certificates?.fallback.key ?? '', { mode: 0o600 });
  const stamp = randomBytes(4).toString('hex');
  const settings: NginxSettings = {
    ...opts.settings,
    httpPort: opts.ports.http,
    ...(opts.ports.https ? { httpsPort: opts.ports.https } : {}),
  };
  const written = new Map<string, string>(); // certificate file → its text, to rewrite only what changed
  const instanceAt = new Map<string, string>(); // "address:port" → instance id, for the access log
  let generation = 0;
  let lastApplied: string | undefined; // the configuration nginx serves, without its generation
  let lastSent: string | undefined; // the upstream addresses nginx's balancer has
  let lastWritten: string | undefined; // the addresses in upstreams.txt
  const updates = createUpdateLoop(
    () => applyOnce(++generation),
    (err) => opts.log.error({ err: err.message }, 'router: nginx update failed'),
  );
  const changed = () => updates.changed();

  let pid = runningMaster(files);
  const adopted = pid !== undefined;
  if (!pid) {
    writeUpstreams();
    const refused = await installConfig(opts.binary, files, render(`${stamp}-0`));
    if (refused) throw new Error(`nginx refused Slipway's configuration: ${refused}`);
    pid = await startMaster(opts.binary, files);
  }
  writePorts(files, opts.ports);
  opts.log.info(
    { nginxPid: pid, adopted, ...opts.ports },
    adopted ? 'router: adopted the running nginx' : 'router: started nginx',
  );

  const tail = tailAccessLog({
    file: files.accessLog,
    offsetFile: path.join(files.prefix, 'access.offset'),
    onRecord: opts.onRequest,
    instanceAt: (upstream) => instanceAt.get(upstream),
    reopen: () => signal('SIGUSR1'),
  });
  opts.certificates?.onChange(() => changed());
  // A master that died (killed, crashed) is started again with the current configuration.
  const watchdog = setInterval(() => {
    if (updates.started && !runningMaster(files)) changed();
  }, 2000);
  watchdog.unref();

  function render(generation: string, snapshot = opts.table.snapshot()): string {
    const sites: NginxSite[] = [];
    for (const { names, target } of snapshot)
      if (target.kind === 'instances') sites.push({ serviceId: target.serviceId, names });
    const pairs = new Map((opts.certificates?.pairs() ?? []).map((p) => [p.name, p]));
    return renderNginxConfig(generation, sites, settings, {
      prefix: files.prefix,
      controlSocket: files.controlSocket,
      upstreamsFile: files.upstreamsFile,
      pidFile: files.pidFile,
      accessLog: files.accessLog,
      errorLog: files.errorLog,
      appsCertificate: { cert: path.join(files.certDir, 'apps.crt'), key: path.join(files.certDir, 'apps.key') },
      certificateOf: (name) => (pairs.has(name) ? certificateFiles(files, name) : undefined),
      certificateNames: [...pairs.keys()],
    });
  }

  /** Writes the instances' addresses and the names where a starting or reloading nginx loads them; returns the text. */
  function writeUpstreams(snapshot = opts.table.snapshot()): string {
    const services: Array<{ serviceId: string; names: string[]; upstreams: Upstream[] }> = [];
    for (const { names, target } of snapshot) {
      if (target.kind !== 'instances') continue;
      services.push({ serviceId: target.serviceId, names, upstreams: target.upstreams });
      for (const u of target.upstreams) if (u.instanceId) instanceAt.set(`${u.host}:${u.port}`, u.instanceId);
    }
    if (instanceAt.size > 10_000) instanceAt.clear();
    const text = renderRoutes(services);
    if (text !== lastWritten) {
      writeFileSync(`${files.upstreamsFile}.next`, text, { mode: 0o600 });
      renameSync(`${files.upstreamsFile}.next`, files.upstreamsFile);
      lastWritten = text;
    }
    return text;
  }

  /** Writes the served certificates' files; true when any changed (a renewal: same names, new files). */
  function writeCertificates(): boolean {
    let changed = false;
    const keep = new Set<string>(['apps.crt', 'apps.key']);
    for (const p of opts.certificates?.pairs() ?? []) {
      if (!SAFE_NAME.test(p.name)) continue; // a file name and a config word: left out, as config.ts leaves it out
      const f = certificateFiles(files, p.name);
      for (const [file, text] of [
        [f.cert, p.certPem],
        [f.key, p.keyPem],
      ] as const) {
        keep.add(path.basename(file));
        if (written.get(file) !== text) {
          writeFileSync(file, text, { mode: 0o600 });
          changed = true;
        }
        written.set(file, text);
      }
    }
    for (const name of readdirSync(files.certDir))
      if (!keep.has(name)) {
        rmSync(path.join(files.certDir, name), { force: true });
        written.delete(path.join(files.certDir, name));
      }
    return changed;
  }

  async function applyOnce(n: number): Promise<void> {
    const generation = `${stamp}-${n}`;
    const renewed = writeCertificates();
    const snapshot = opts.table.snapshot();
    const upstreams = writeUpstreams(snapshot);
    const text = render(generation, snapshot);
    // A reload closes idle client connections: a roll-over or a new service only changes addresses and names, which
    // Lua takes over the control socket; nginx reloads only for certificates and settings, or starts again if it died.
    const same = text.replaceAll(generation, '') === lastApplied;
    if (same && !renewed && runningMaster(files)) {
      if (upstreams !== lastSent) {
        const answer = await askControl(files, '/upstreams', upstreams);
        if (answer?.startsWith('full'))
          opts.log.error({ answer: answer.trim() }, "router: nginx's route dicts are full; some names are not routed");
        if (answer !== undefined) lastSent = upstreams;
      }
      if (upstreams === lastSent) return;
      opts.log.warn({}, 'router: nginx did not take the new addresses; reloading it');
    }
    const refused = await installConfig(opts.binary, files, text);
    if (refused) {
      opts.log.error({ refused }, 'router: nginx refused the new configuration; the old one keeps serving');
      return opts.onRejected(refused);
    }
    pid = runningMaster(files);
    const oldWorkers = pid ? workersOf(pid) : [];
    if (!pid) {
      opts.log.warn({}, 'router: nginx was not running; starting it');
      pid = await startMaster(opts.binary, files);
    } else signal('SIGHUP');
    // The new configuration's init_by_lua loaded the addresses file; the old workers share the same dict.
    if (await serves(files, generation)) {
      lastApplied = text.replaceAll(generation, '');
      lastSent = upstreams;
    } else opts.log.warn({ generation }, 'router: nginx did not take the new configuration within 10 s');
    // Old workers accept connections for a moment after new ones serve, with the old names and certificates: a
    // removed domain is routed no more once they are gone (they finish their requests first, up to the timeout).
    await waitGone(oldWorkers, WORKER_SHUTDOWN_MS + 1000);
  }

  function signal(name: NodeJS.Signals): void {
    try {
      if (pid) process.kill(pid, name);
    } catch {
      // gone: the watchdog starts it again
    }
  }

  return {
    adopted,
    ports: opts.ports,
    get pid() {
      return pid;
    },
    changed,
    /** Resolves once nginx serves every change made before the call. */
    applied: () => updates.applied(),
    /** Begins applying the route table (call once the live instances are back in it). */
    start: () => updates.start(),
    /** Stops following; nginx itself keeps serving (it outlives Slipway, like the apps). */
    close(): void {
      updates.stop();
      clearInterval(watchdog);
      tail.flush();
      tail.stop();
    },
  };
}
export type NginxPlane = Awaited<ReturnType<typeof createNginxPlane>>;

/** The master's children: its workers (and, for a moment after a reload, the old ones). */
function workersOf(master: number): number[] {
  try {
    return readFileSync(`/proc/${master}/task/${master}/children`, 'utf8')
      .trim()
      .split(/\s+/)
      .filter(Boolean)
      .map(Number);
  } catch {
    return [];
  }
}

const certificateFiles = (files: NginxFiles, name: string) => ({
  cert: path.join(files.certDir, `${name}.crt`),
  key: path.join(files.certDir, `${name}.key`),
});

/** Polls nginx's control socket until the workers that accept connections run `generation`. */
async function serves(files: NginxFiles, generation: string): Promise<boolean> {
  for (let waited = 0; waited < 10_000; waited += 25) {
    if ((await askControl(files, '/generation')) === generation) return true;
    await new Promise((r) => setTimeout(r, 25));
  }
  return false;
}

/** Stops this data dir's nginx (tests; an operator uses the pid file): SIGTERM, then waits for the master to go. */
export async function stopNginx(dataDir: string): Promise<void> {
  const files = nginxFiles(dataDir);
  const pid = runningMaster(files);
  if (!pid) return;
  try {
    process.kill(pid, 'SIGTERM');
  } catch {
    return;
  }
  for (let waited = 0; waited < 10_000 && runningMaster(files); waited += 50)
    await new Promise((r) => setTimeout(r, 50));
}
