import http from 'node:http';
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { run, spawnDetached, type Command } from '../../lib/exec.js';
import { allProcesses, holdsFileUnder, isLive, waitGone } from '../../runtime/local/proc.js';

/**
 * One nginx master per data dir, run from `<dataDir>/router-nginx`. It is started in a process group of its own and
 * not tied to Slipway (spawnDetached, `daemon off`, so no fork races the executor), so it outlives Slipway: a restarted Slipway adopts it through its pid file instead of starting a second one, and apps
 * stay reachable while the API restarts.
 */
export interface NginxFiles {
  prefix: string;
  conf: string;
  pidFile: string;
  errorLog: string;
  accessLog: string;
  /** The ports of the running master, kept so an adopting Slipway listens where it did. */
  portsFile: string;
  certDir: string;
  controlSocket: string;
  upstreamsFile: string;
}

export const nginxFiles = (dataDir: string): NginxFiles => {
  const prefix = path.join(dataDir, 'router-nginx');
  return {
    prefix,
    conf: path.join(prefix, 'nginx.conf'),
    pidFile: path.join(prefix, 'nginx.pid'),
    errorLog: path.join(prefix, 'error.log'),
    accessLog: path.join(prefix, 'access.log'),
    portsFile: path.join(prefix, 'ports.json'),
    certDir: path.join(prefix, 'certs'),
    controlSocket: path.join(prefix, 'control.sock'),
    upstreamsFile: path.join(prefix, 'upstreams.txt'),
  };
};

/** nginx's command lines, as data. `-e` sends start-up errors to our log, not to /var/log/nginx. */
export const nginxCommands = (binary: string, f: NginxFiles) => {
  const base = ['-p', f.prefix, '-e', f.errorLog];
  return {
    test: (conf: string): Command => ({ file: binary, args: [...base, '-t', '-q', '-c', conf] }),
    start: (): Command => ({ file: binary, args: [...base, '-c', f.conf, '-g', 'daemon off;'] }),
  };
};

export function prepareDirs(f: NginxFiles) {
  for (const dir of [f.prefix, f.certDir, path.join(f.prefix, 'tmp')]) mkdirSync(dir, { recursive: true, mode: 0o700 });
}

/** The running master of this data dir's nginx, if any: the pid file's process, still an nginx master on our config. */
export function runningMaster(f: NginxFiles): number | undefined {
  try {
    const pid = Number(readFileSync(f.pidFile, 'utf8').trim());
    if (!(pid > 0)) return undefined;
    const cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
    return cmdline.includes('nginx: master process') && cmdline.includes(f.conf) ? pid : undefined;
  } catch {
    return undefined;
  }
}

export function readPorts(f: NginxFiles): { http?: number; https?: number } | undefined {
  try {
    return JSON.parse(readFileSync(f.portsFile, 'utf8')) as { http?: number; https?: number };
  } catch {
    return undefined;
  }
}
export const writePorts = (f: NginxFiles, ports: object) =>
  writeFileSync(f.portsFile, JSON.stringify(ports), { mode: 0o600 });

/**
 * Puts `text` in place as nginx's configuration only once `nginx -t` accepts it; returns nginx's complaint otherwise
 * (the running configuration is left as it was).
 */
export async function installConfig(binary: string, f: NginxFiles, text: string): Promise<string | undefined> {
  const next = `${f.conf}.next`;
  writeFileSync(next, text, { mode: 0o600 });
  const checked = await run(nginxCommands(binary, f).test(next), { timeoutMs: 30_000 });
  if (checked.exitCode !== 0) return checked.output.trim() || `nginx -t exited with ${checked.exitCode}`;
  renameSync(next, f.conf);
  return undefined;
}

/**
 * nginx's workers do not watch their master: after a `kill -9` of it they go on serving the old configuration, holding
 * the listening sockets a new master must bind. No master of ours is known to run when this is called, so every nginx
 * process holding a file of this prefix open (its logs) is such a leftover: it is killed, and awaited so its ports are
 * free. An app cannot pass for one: the prefix is 0700, so it cannot hold a file there.
 */
async function killLeftovers(f: NginxFiles): Promise<void> {
  const leftovers = allProcesses()
    .filter((p) => p.comm === 'nginx' && isLive(p) && holdsFileUnder(p.pid, f.prefix))
    .map((p) => p.pid);
  for (const pid of leftovers) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // gone meanwhile
    }
  }
  await waitGone(leftovers, 5000);
}

/**
 * Starts the master (none runs for this data dir); resolves once it has bound its ports and written its pid file.
 * nginx does not bind a unix socket whose file exists, and a master that was killed, crashed or failed to start
 * leaves the control socket's file behind: it is removed first.
 */
export async function startMaster(binary: string, f: NginxFiles): Promise<number> {
  await killLeftovers(f);
  rmSync(f.controlSocket, { force: true });
  let exited: string | undefined;
  const output = path.join(f.prefix, 'master.out');
  await spawnDetached(nginxCommands(binary, f).start(), { stdoutPath: output, stderrPath: output }, (code, signal) => {
    exited = `nginx exited (${signal ?? code})`;
  });
  for (let waited = 0; waited < 10_000 && !exited; waited += 20) {
    const pid = runningMaster(f);
    if (pid) return pid;
    await new Promise((r) => setTimeout(r, 20));
  }
  const log = existsSync(f.errorLog) ? readFileSync(f.errorLog, 'utf8').trim().split('\n').slice(-3).join('; ') : '';
  throw new Error(`nginx did not start: ${exited ?? 'no pid file within 10 s'}${log ? `: ${log}` : ''}`);
}

export const nginxBinary = (candidates = ['/usr/sbin/nginx', '/usr/bin/nginx', '/usr/local/sbin/nginx']) =>
  candidates.find((file) => existsSync(file));

/** The dynamic modules the plane needs (Debian: libnginx-mod-http-lua, which brings NDK): their paths, or undefined. */
export function nginxLuaModules(dirs = ['/usr/lib/nginx/modules', '/usr/share/nginx/modules']): string[] | undefined {
  for (const dir of dirs) {
    const modules = ['ndk_http_module.so', 'ngx_http_lua_module.so'].map((m) => path.join(dir, m));
    if (modules.every((m) => existsSync(m))) return modules;
  }
  return undefined;
}

/**
 * One request to nginx's control socket (config.ts), on a new connection each time (a kept-alive one may reach an old
 * worker): the answer's body when it is a 200, undefined otherwise or when nginx did not answer.
 */
export function askControl(
  f: NginxFiles,
  path: '/generation' | '/upstreams',
  body?: string,
): Promise<string | undefined> {
  return new Promise((resolve) => {
    const req = http.request(
      { socketPath: f.controlSocket, path, method: body === undefined ? 'GET' : 'PUT', agent: false, timeout: 5000 },
      (res) => {
        let text = '';
        res.on('data', (c: Buffer) => (text += c.toString()));
        res.on('end', () => resolve(res.statusCode === 200 ? text : undefined));
      },
    );
    req.on('timeout', () => req.destroy());
    req.on('error', () => resolve(undefined));
    req.end(body);
  });
}
