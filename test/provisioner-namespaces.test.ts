/**
 * Local servers in network namespaces of their own, at the provisioner level, with the real runtime's attachServer
 * and release: a server placed on the shared network is moved into a namespace when Slipway's network mode changes,
 * a running one is re-adopted in its namespace (same process, same address) by a new provisioner (a restarted
 * Slipway), even from a placement that was never saved, and stop/destroy remove its namespace.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { newId } from '../src/lib/ids.js';
import { createLocalKeyValue, findKeyValueServer } from '../src/provisioners/keyvalue/local.js';
import { findPostgresInstalls } from '../src/provisioners/postgres/binaries.js';
import { createLocalPostgres } from '../src/provisioners/postgres/local.js';
import type { ServerNetwork } from '../src/provisioners/server-network.js';
import type { KeyValueSpec, Placement, PostgresSpec, Provisioner } from '../src/provisioners/types.js';
import { findProgram } from '../src/runtime/local/capabilities.js';
import { createLocalRuntime } from '../src/runtime/local/index.js';
import { removeNetworksOf } from '../src/runtime/local/network/index.js';
import { namespaceAddress } from './helpers/network.js';

const IS_ROOT = process.getuid?.() === 0;
const pgVersion = [...findPostgresInstalls().keys()].pop();
const redisServer = findKeyValueServer();
const NOBODY = { uid: 65534, gid: 65534 };
const CIDR = '10.213.0.0/16';

const dataDir = mkdtempSync(path.join(tmpdir(), 'slipway-ns-provisioner-'));
const runtime = IS_ROOT ? await createLocalRuntime({ dataDir, network: 'namespaces' }) : undefined;
const network: ServerNetwork | undefined = runtime && {
  attach: runtime.attachServer.bind(runtime),
  release: runtime.release.bind(runtime),
};
afterAll(async () => {
  await runtime?.sweepServers(() => false);
  await removeNetworksOf(dataDir, CIDR, findProgram);
  rmSync(dataDir, { recursive: true, force: true });
});

/**
 * The story every local provisioner must tell: shared placement → namespace on a mode change; re-adoption by a new
 * provisioner, also from a stale placement; stop and destroy release the namespace. `reaches` logs in over TCP.
 */
async function namespaceStory<S extends { id: string }>(
  make: (net?: ServerNetwork) => Provisioner<S>,
  spec: S,
  standardPort: number,
  reaches: (p: Placement) => Promise<boolean>,
): Promise<void> {
  const shared = await make().create(spec);
  expect(shared).toMatchObject({ host: '127.0.0.1' });
  expect(shared.state.internalHost).toBeUndefined();

  const namespaced = make(network);
  expect(await namespaced.check(spec, shared), 'a loopback server is not where apps in namespaces can reach it').toBe(
    false,
  );
  const moved = await namespaced.start(spec, shared);
  const address = namespaceAddress(spec.id);
  expect(moved).toMatchObject({ host: address, port: standardPort, state: { internalHost: spec.id } });
  expect(address).toMatch(/^10\.213\./);
  expect(await namespaced.check(spec, moved)).toBe(true);
  expect(await reaches(moved)).toBe(true);
  // Entered as root, run as its user (the runtime's nsenter switches after entering).
  expect(readFileSync(`/proc/${moved.state.pid as number}/status`, 'utf8')).toMatch(
    new RegExp(`^Uid:\\s+${NOBODY.uid}\\s`, 'm'),
  );

  // A restarted Slipway adopts it where it runs, also from a placement of an earlier start that was never saved.
  const restarted = make(network);
  expect(await restarted.check(spec, moved)).toBe(true);
  expect(await restarted.start(spec, moved)).toEqual(moved);
  const stale = { ...moved, host: '10.213.255.254' };
  expect(await restarted.check(spec, stale)).toBe(false);
  expect(await restarted.start(spec, stale)).toEqual(moved);
  expect(namespaceAddress(spec.id)).toBe(address);

  await restarted.stop(spec, moved);
  expect(namespaceAddress(spec.id)).toBeUndefined();
  const again = await restarted.start(spec, moved);
  expect(again.state.internalHost).toBe(spec.id);
  expect(again.host).toBe(namespaceAddress(spec.id));
  expect(await reaches(again)).toBe(true);
  await restarted.destroy(spec, again);
  expect(namespaceAddress(spec.id)).toBeUndefined();

  // And back to the shared network: a free port on loopback, never the namespace's standard one, which on the host
  // may be anybody's (this machine's own Postgres and Redis listen there).
  const inNamespace = await namespaced.create(spec);
  await namespaced.stop(spec, inNamespace);
  const back = await make().start(spec, inNamespace);
  expect(back.host).toBe('127.0.0.1');
  expect(back.port).not.toBe(standardPort);
  expect(await reaches(back)).toBe(true);
  await make().destroy(spec, back);
}

describe.runIf(IS_ROOT && pgVersion)('local postgres in a namespace of its own', () => {
  it('moves into one, is re-adopted there, and releases it on stop and destroy', async () => {
    const spec: PostgresSpec = {
      id: newId('postgres'),
      workspaceId: `tea-${randomBytes(4).toString('hex')}`,
      version: pgVersion!,
      databaseName: 'app',
      databaseUser: 'app_user',
      password: randomBytes(18).toString('base64url'),
      size: { memoryMb: 128, maxConnections: 10 },
    };
    const reaches = async (p: Placement) => {
      const c = new pg.Client({
        host: p.host,
        port: p.port,
        user: spec.databaseUser,
        password: spec.password,
        database: spec.databaseName,
        connectionTimeoutMillis: 3000,
      });
      await c.connect();
      const { rows } = await c.query('select 1 as ok');
      await c.end();
      return rows[0]?.ok === 1;
    };
    await namespaceStory((net) => createLocalPostgres({ dataDir, runAs: NOBODY, network: net }), spec, 5432, reaches);
    expect(existsSync(path.join(dataDir, 'datastores', spec.id))).toBe(false);
  }, 120_000);
});

describe.runIf(IS_ROOT && redisServer)('local key-value in a namespace of its own', () => {
  it('moves into one (run as its user through nsenter), is re-adopted there, and releases it on stop and destroy', async () => {
    const spec: KeyValueSpec = {
      id: newId('keyValue'),
      workspaceId: `tea-${randomBytes(4).toString('hex')}`,
      user: 'default',
      password: randomBytes(18).toString('base64url'),
      size: { memoryMb: 32, maxConnections: 20 },
      maxmemoryPolicy: 'allkeys-lru',
      persistent: true,
    };
    const reaches = async (p: Placement) => {
      const r = new Redis({
        host: p.host,
        port: p.port,
        password: spec.password,
        lazyConnect: true,
        maxRetriesPerRequest: 0,
        retryStrategy: () => null,
        connectTimeout: 3000,
      });
      r.on('error', () => undefined);
      try {
        await r.connect();
        return (await r.ping()) === 'PONG';
      } finally {
        r.disconnect();
      }
    };
    await namespaceStory(
      (net) => createLocalKeyValue({ dataDir, runAs: NOBODY, serverPath: redisServer, network: net }),
      spec,
      6379,
      reaches,
    );
  }, 120_000);
});
