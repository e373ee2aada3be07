import { stopNginx } from '../../src/router/nginx/index.js';
import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, inject } from 'vitest';
import { loadConfig, type Config } from '../../src/app/config.js';
import type { LogOptions } from '../../src/http/app.js';
import { findProgram } from '../../src/runtime/local/capabilities.js';
import { removeNetworksOf } from '../../src/runtime/local/network/index.js';
import { sweepBuildDisks } from '../../src/runtime/local/build-disks.js';
import { startSlipway, type Slipway } from '../../src/app/start.js';
import { client, type Client } from './client.js';
import { killProcessesUnder, unmountUnder } from './kill-under.js';

export { killProcessesUnder, unmountUnder };

/** Postgres to run against, when the suite runs in its Postgres mode. */
export const TEST_DATABASE_URL = process.env.TEST_DATABASE_URL || process.env.DATABASE_URL || undefined;

export interface TestServer {
  url: string;
  slipway: Slipway;
  config: Config;
  dataDir: string;
  databaseUrl: string | undefined;
  /** Stops the server, keeping its data (for restart tests). */
  stop(): Promise<void>;
  /** Stops the server and removes its data dir and database. */
  close(): Promise<void>;
}

/**
 * A fresh database on the test Postgres, so servers never see each other's rows: a copy of the run's migrated template
 * (global-setup.ts), which a server's start then finds up to date.
 */
export async function createTestDatabase(adminUrl: string): Promise<{ url: string; drop(): Promise<void> }> {
  const name = `slipway_t_${Date.now().toString(36)}_${Math.random().toString(36).slice(2, 8)}`;
  const template = inject('pgTemplate');
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  await admin.query(`create database ${name}${template ? ` template ${template}` : ''}`);
  await admin.end();
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    async drop() {
      const c = new pg.Client({ connectionString: adminUrl });
      await c.connect();
      await c.query(`drop database if exists ${name} with (force)`);
      await c.end();
    },
  };
}

/** SIGKILLs the process group of every instance the store knows. */
export async function killApps(slipway: Slipway) {
  const { rows } = await slipway.store.executeSql(
    `select pid from instances where pid is not null and status in ('starting', 'running')`,
  );
  for (const { pid } of rows) {
    try {
      process.kill(-pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
}

/** SIGKILLs every local datastore server the store knows (they outlive Slipway by design, like apps). */
export async function killDatastores(slipway: Slipway) {
  const { rows } = await slipway.store.executeSql(
    `select provisioner_state->>'pid' as pid from datastores where provisioner = 'local'`,
  );
  const alive = (target: number) => {
    try {
      process.kill(target, 0);
      return true;
    } catch {
      return false;
    }
  };
  const groups = rows.filter((r) => r.pid).map((r) => -Number(r.pid));
  for (const group of groups) {
    for (const target of [group, -group]) {
      try {
        process.kill(target, 'SIGKILL');
      } catch {
        // already gone
      }
    }
  }
  // SIGKILL is not instant: wait for the groups to go, so their files can be removed.
  for (let waited = 0; waited < 5000 && groups.some(alive); waited += 50) await new Promise((r) => setTimeout(r, 50));
}

/** Each running test server's data dir by its router port: a timed-out router request reports nginx's errors. */
export const dataDirsByRouterPort = new Map<number, string>();

/**
 * Starts a new data dir's PGlite store from the suite's migrated template (global-setup.ts) rather than from initdb:
 * the same files a first start makes, in milliseconds rather than seconds.
 */
export function seedPglite(dataDir: string) {
  cpSync(path.join(inject('pgliteTemplate'), 'pglite'), path.join(dataDir, 'pglite'), { recursive: true });
}

/** Boots the real server on a random port with a temp data dir (and a fresh database in Postgres mode). */
export async function bootServer(
  env: Record<string, string> = {},
  reuse?: { dataDir: string; databaseUrl?: string },
  log: LogOptions['log'] = false,
): Promise<TestServer> {
  const dataDir = reuse?.dataDir ?? mkdtempSync(path.join(tmpdir(), 'slipway-test-'));
  const database = reuse ? undefined : TEST_DATABASE_URL ? await createTestDatabase(TEST_DATABASE_URL) : undefined;
  const databaseUrl = reuse ? reuse.databaseUrl : database?.url;
  if (!reuse && !databaseUrl && !env.DATABASE_URL) seedPglite(dataDir);
  const config = loadConfig({
    SLIPWAY_DATA_DIR: dataDir,
    SLIPWAY_PORT: '0',
    SLIPWAY_AUTH_RATE_LIMIT_PER_MINUTE: '1000',
    SLIPWAY_AUTH_ACCOUNT_ATTEMPTS_PER_10_MINUTES: '1000',
    SLIPWAY_ROUTER_PORT: '0',
    SLIPWAY_ROUTER_HTTPS_PORT: '0',
    SLIPWAY_HEALTH_CHECK_TIMEOUT_SECONDS: '10',
    SLIPWAY_CRASH_CHECK_MS: '200',
    SLIPWAY_CRASH_BACKOFF_MS: '100',
    // Node.js releases that apps ask for (express-hello-world's engines.node among them), downloaded once per run.
    SLIPWAY_NODE_CACHE_DIR: inject('nodeCacheDir'),
    ...(databaseUrl ? { DATABASE_URL: databaseUrl } : {}),
    ...env,
  });
  const slipway = await startSlipway(config, { log }).catch(async (err: unknown) => {
    // A start that is meant to fail (a bad setting) leaves nothing behind either: not the router's own process.
    if (!reuse) killProcessesUnder(dataDir);
    await database?.drop();
    if (!reuse) rmSync(dataDir, { recursive: true, force: true });
    throw err;
  });
  dataDirsByRouterPort.set(slipway.routerPort, dataDir);
  let stopped = false;
  const stop = async () => {
    if (stopped) return;
    stopped = true;
    await slipway.close();
  };
  return {
    url: slipway.url,
    slipway,
    config,
    dataDir,
    databaseUrl,
    stop,
    async close() {
      // Apps outlive Slipway by design; a test's apps must not outlive the test.
      if (!stopped) await killApps(slipway).catch(() => undefined);
      if (!stopped) await killDatastores(slipway).catch(() => undefined);
      await stop();
      await stopNginx(dataDir); // SLIPWAY_ROUTER=nginx: it outlives Slipway by design, not the test
      dataDirsByRouterPort.delete(slipway.routerPort);
      killProcessesUnder(dataDir);
      unmountUnder(dataDir);
      await removeNetworksOf(dataDir, config.networkCidr, findProgram);
      await sweepBuildDisks(dataDir);
      await database?.drop();
      // A container's start that was under way when Slipway stopped may still mount its root: kill and unmount again.
      for (let attempt = 1; ; attempt++) {
        try {
          rmSync(dataDir, { recursive: true, force: true, maxRetries: 5 });
          break;
        } catch (err) {
          if ((err as NodeJS.ErrnoException).code !== 'EBUSY' || attempt === 5) throw err;
          await new Promise((resolve) => setTimeout(resolve, 500));
          killProcessesUnder(dataDir);
          unmountUnder(dataDir);
        }
      }
    },
  };
}

/** One server for a test file: booted before its tests, closed after them. */
export function useServer(env: Record<string, string> = {}): { server: TestServer; api: Client } {
  const ctx = {} as { server: TestServer; api: Client };
  beforeAll(async () => {
    ctx.server = await bootServer(env);
    ctx.api = client(ctx.server.url);
  });
  afterAll(() => ctx.server?.close());
  return ctx;
}
