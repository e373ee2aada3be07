import { readFileSync } from 'node:fs';
import { spawn } from 'node:child_process';
import { afterEach, describe, expect, it } from 'vitest';
import { nginxBinary, nginxLuaModules } from '../src/router/nginx/process.js';
import { findProgram } from '../src/runtime/local/capabilities.js';
import { formatStartupSummary, type StartupFacts } from '../src/app/startup-summary.js';
import { freePort, freshStore, REPO_ROOT, spawnSlipway, type SlipwayProcess, within } from './helpers/process.js';

const facts = (over: Partial<StartupFacts> = {}): StartupFacts => ({
  apiUrl: 'http://127.0.0.1:8000',
  publicUrl: 'http://127.0.0.1:8000',
  docsUrl: 'http://127.0.0.1:8000/docs',
  routerUrl: 'http://127.0.0.1:8080',
  appsDomain: 'localhost',
  routerPort: 8080,
  routerKind: 'node',
  dataDir: '/var/lib/slipway',
  storeKind: 'pglite',
  runAs: 'nobody',
  machine: {
    isolation: {
      network: 'shared',
      sandbox: 'none',
      cgroups: 'v2',
      limits: { memory: true, cpu: true, pids: true, disk: false, seccomp: false, buildDisk: false },
      notes: ['apps are not isolated from each other: no bubblewrap sandbox (install it: apt-get install bubblewrap)'],
    },
    containers: { engine: 'podman 4.3.1' },
    datastores: {
      postgres: { mode: 'local', versions: ['15', '16'] },
      keyValue: { mode: 'off', note: 'Key-value datastores are not enabled: install redis-server' },
    },
  },
  ...over,
});

describe('the start-up summary (a terminal)', () => {
  it('says where the API, its docs, the router and the data are, and each missing capability with its fix', () => {
    const text = formatStartupSummary(facts(), 200);
    expect(text).toContain('API         http://127.0.0.1:8000\n');
    expect(text).toContain('API docs    http://127.0.0.1:8000/docs\n');
    expect(text).toContain('Router      http://127.0.0.1:8080 (node), apps at http://<service>.localhost:8080\n');
    expect(text).toContain('Data dir    /var/lib/slipway\n');
    expect(text).toContain('Store       PGlite');
    expect(text).toMatch(
      /Isolation {3}no sandbox, apps run as nobody, network shared, limits: memory, cpu, pids \(cgroups v2\)/,
    );
    expect(text).toContain('Datastores  Postgres local servers (15, 16); key-value off\n');
    expect(text).toContain(
      '  - apps are not isolated from each other: no bubblewrap sandbox (install it: apt-get install bubblewrap)',
    );
    expect(text).toContain('  - Key-value datastores are not enabled: install redis-server');
  });

  it('wraps long notes under their bullet, and names a public URL that differs from where it listens', () => {
    const note = 'word '.repeat(40).trim();
    const text = formatStartupSummary(
      facts({
        publicUrl: 'https://slipway.example.com',
        machine: { ...facts().machine, isolation: { ...facts().machine.isolation, notes: [note] } },
      }),
      60,
    );
    expect(text).toMatch(/API {9}http:\/\/127\.0\.0\.1:8000 \(public URL\s+https:\/\/slipway\.example\.com\)/);
    const bullet = text.split('\n').filter((l) => /^ {2}- word|^ {4}word/.test(l));
    expect(bullet.length).toBeGreaterThan(2);
    for (const line of bullet) expect(line.length).toBeLessThanOrEqual(60);
    expect(
      bullet
        .join(' ')
        .replace(/\s+-?\s*/g, ' ')
        .trim(),
    ).toBe(note);
  });

  it('has no notes section when nothing is missing', () => {
    const machine = facts().machine;
    const text = formatStartupSummary(
      facts({
        machine: {
          isolation: { ...machine.isolation, notes: [] },
          containers: machine.containers,
          datastores: { ...machine.datastores, keyValue: { mode: 'local', versions: ['7.2'] } },
        },
      }),
    );
    expect(text).not.toContain('could not set up');
  });
});

/** Slipway as `npm start` runs it, on free ports; without the sandbox, namespaces and local datastores, so each says how to get it. */
async function settings() {
  const store = await freshStore();
  const port = await freePort();
  const routerPort = await freePort();
  const env = {
    ...store.env,
    SLIPWAY_PORT: String(port),
    SLIPWAY_ROUTER_PORT: String(routerPort),
    SLIPWAY_SANDBOX: 'off',
    SLIPWAY_NETWORK: 'shared',
    SLIPWAY_LOCAL_DATASTORES: '0',
  };
  return { store, env, api: `http://127.0.0.1:${port}`, router: `http://127.0.0.1:${routerPort}` };
}

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const step of cleanups.splice(0).reverse()) await step();
});

describe('Slipway started from a terminal and from a pipe', () => {
  it.skipIf(!findProgram('script'))(
    'prints the summary in a terminal (no JSON start-up lines), with working URLs; Ctrl-C stops it',
    async () => {
      const { store, env, api, router } = await settings();
      cleanups.push(() => store.remove());
      const base = Object.fromEntries(
        Object.entries(process.env).filter(([k]) => !k.startsWith('SLIPWAY_') && k !== 'DATABASE_URL'),
      );
      // `script` gives the command a pseudo-terminal, as a shell in a terminal would. `exec`: without it, a shell that
      // forks (dash, when SHELL is unset) gets the Ctrl-C too and dies of it, and `script` reports its 130.
      const command = `exec '${process.execPath}' --import tsx src/main.ts`;
      const child = spawn('script', ['-qfec', command, '/dev/null'], {
        cwd: REPO_ROOT,
        env: { ...base, SLIPWAY_HOST: '127.0.0.1', SLIPWAY_LOG_LEVEL: 'info', SLIPWAY_ROUTER_HTTPS_PORT: '0', ...env },
        stdio: ['pipe', 'pipe', 'pipe'],
      });
      const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
      cleanups.push(async () => {
        if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
        await exited;
      });
      let out = '';
      child.stdout.setEncoding('utf8').on('data', (chunk: string) => (out += chunk));
      await new Promise<void>((resolve, reject) => {
        const settle = (err?: Error) => {
          clearTimeout(timer);
          if (err) reject(err);
          else resolve();
        };
        const timer = setTimeout(() => settle(new Error(`no summary within 60 s:\n${out}`)), 60_000);
        child.stdout.on('data', () => out.includes('Logs follow') && settle());
        child.once('exit', () => settle(new Error(`exited before the summary:\n${out}`)));
      });
      const lines = out.replace(/\r/g, '').split('\n');
      const summary = lines.slice(lines.indexOf('Slipway is up'));
      expect(lines.indexOf('Slipway is up')).toBeGreaterThanOrEqual(0);
      expect(summary).toContain(`  API         ${api}`);
      expect(summary).toContain(`  API docs    ${api}/docs`);
      const kind = nginxBinary() && nginxLuaModules() ? 'nginx' : 'node'; // SLIPWAY_ROUTER=auto
      const routerRow = `  Router      ${router} (${kind}, pid `;
      const row = summary.find((l) => l.startsWith(routerRow));
      expect(row).toMatch(new RegExp(`pid \\d+\\), apps at http://<service>\\.localhost:${new URL(router).port}$`));
      // The pid is the process that serves the apps: nginx's master, or the Node router's own process.
      const pid = /pid (\d+)/.exec(row!)![1];
      expect(readFileSync(`/proc/${pid}/cmdline`, 'utf8')).toMatch(kind === 'nginx' ? /^nginx: master/ : /router/);
      expect(summary).toContain(`  Data dir    ${store.dataDir}`);
      const text = summary.join('\n');
      expect(text).toMatch(/- apps are not isolated from each other: no bubblewrap sandbox \(it is turned off/);
      expect(text).toMatch(/install\s+it:/);
      expect(text).toMatch(/SLIPWAY_POSTGRES_ADMIN_URL/);
      expect(text).toMatch(/SLIPWAY_REDIS_ADMIN_URL/);
      // The summary replaces the start-up's JSON lines.
      expect(out).not.toContain('"msg":"runtime: ');
      expect(out).not.toContain('Server listening at');
      expect(out).not.toContain('"msg":"slipway is up"');

      expect((await fetch(`${api}/api/health`)).status).toBe(200);
      expect((await fetch(`${api}/docs`)).status).toBeLessThan(400);
      expect((await fetch(router)).status).toBe(404); // the router, answering for no app
      child.stdin.write('\x03'); // Ctrl-C: the terminal sends SIGINT
      expect(await within(exited, 20_000, 'exit after Ctrl-C')).toBe(0);
    },
    90_000,
  );

  it('logs JSON lines when stdout is not a terminal, with the router URL on the `slipway is up` line', async () => {
    const { store, env, api, router } = await settings();
    cleanups.push(() => store.remove());
    const proc: SlipwayProcess = spawnSlipway(env);
    cleanups.push(() => proc.kill());
    const up = JSON.parse(await proc.waitForOutput(/"slipway is up"/, 60_000));
    expect(up).toMatchObject({ url: api, docsUrl: `${api}/docs`, routerUrl: router, dataDir: store.dataDir });
    const lines = proc.stdout().split('\n').filter(Boolean);
    for (const line of lines) expect(() => JSON.parse(line), line).not.toThrow();
    expect(lines.some((l) => /"msg":"runtime: apps are not isolated/.test(l))).toBe(true);
    expect(proc.stdout()).not.toContain('Slipway is up');
  }, 90_000);
});
