/**
 * Backups that leave the machine (SLIPWAY_BACKUP_S3_*): a local Postgres archives its WAL and base backups with
 * pgBackRest to an S3-compatible bucket (s3rver over TLS on loopback here), from inside its network namespace, whose
 * only way out is that endpoint. A recovery restores from the bucket; nothing lands in the local backup dir but
 * configs and logs; a deleted database's objects go when its window is over.
 */
import { execFileSync } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../src/app/config.js';
import { findPgbackrest } from '../src/provisioners/postgres/backups.js';
import { client, signUp, type Client, type TestUser } from './helpers/client.js';
import { hasPostgresServer, requireOrSkip, untilStatus } from './helpers/datastores.js';
import { leaseOf } from './helpers/network.js';
import { startS3, type TestS3 } from './helpers/s3.js';
import { sleep, waitFor } from './helpers/process.js';
import { bootServer, type TestServer } from './helpers/server.js';

const BUCKET = 'slipway-backups';
const ok = requireOrSkip('postgres/initdb and pgbackrest', hasPostgresServer() && !!findPgbackrest());
let server: TestServer;
let s3: TestS3;
let dir: string;
let api: Client;
let owner: TestUser;

beforeAll(async () => {
  if (!ok) return;
  dir = mkdtempSync(path.join(os.tmpdir(), 'slipway-s3-'));
  chmodSync(dir, 0o755); // the CA file in it is read by the servers' run user
  s3 = await startS3(dir, BUCKET);
  server = await bootServer({
    SLIPWAY_BACKUP_CHECK_MS: '500',
    SLIPWAY_DATASTORE_CHECK_MS: '300',
    SLIPWAY_BACKUP_S3_ENDPOINT: `localhost:${s3.port}`,
    SLIPWAY_BACKUP_S3_BUCKET: BUCKET,
    SLIPWAY_BACKUP_S3_ACCESS_KEY_ID: 'S3RVER',
    SLIPWAY_BACKUP_S3_SECRET_ACCESS_KEY: 'S3RVER',
    SLIPWAY_BACKUP_S3_URI_STYLE: 'path',
    SLIPWAY_BACKUP_S3_PATH: 'test-run',
    SLIPWAY_BACKUP_S3_CA_FILE: s3.caFile,
  });
  api = client(server.url);
  owner = await signUp(api);
}, 60_000);
afterAll(async () => {
  await server?.close();
  await s3?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

/** The bucket's object keys under `prefix` (s3rver keeps each object as a file named by its key). */
function objects(prefix: string): string[] {
  const root = path.join(s3.objectsDir, BUCKET);
  const keys: string[] = [];
  const walk = (at: string) => {
    for (const entry of readdirSync(at, { withFileTypes: true })) {
      const file = path.join(at, entry.name);
      if (entry.isDirectory()) walk(file);
      else if (entry.name.endsWith('._S3rver_object'))
        keys.push(path.relative(root, file).replace(/\._S3rver_object$/, ''));
    }
  };
  if (existsSync(root)) walk(root);
  return keys.filter((key) => key.startsWith(prefix));
}

async function sql(conninfo: string, text: string): Promise<number[]> {
  const c = new pg.Client({ connectionString: conninfo, connectionTimeoutMillis: 5000 });
  await c.connect();
  try {
    const result = (await c.query(text)) as unknown as pg.QueryResult | pg.QueryResult[]; // several statements: several results
    return (Array.isArray(result) ? result.at(-1)! : result).rows.map((r: { id: number }) => r.id);
  } finally {
    await c.end();
  }
}

/** From inside namespace `netns`: whether a TCP connect to host:port is let through (root enters it). */
function connectsFrom(netns: string, host: string, port: number): string {
  const probe = `const s=require('net').connect(${port},'${host}');s.setTimeout(3000);
    s.on('connect',()=>{console.log('open');process.exit(0)});s.on('timeout',()=>{console.log('timeout');process.exit(0)});
    s.on('error',(e)=>{console.log(e.code);process.exit(0)})`;
  return execFileSync('nsenter', [`--net=${netns}`, '--', process.execPath, '-e', probe], { encoding: 'utf8' }).trim();
}

describe.skipIf(!ok)('Postgres backups on S3', () => {
  it('archives to the bucket from the server namespace, recovers from it, and removes it after the window', async () => {
    const created = await api.post('/v1/postgres', { name: 'orders', plan: 'basic_256mb' }, owner);
    expect(created.status, created.text).toBe(201);
    const id = created.body.id as string;
    const url = `/v1/postgres/${id}`;
    await untilStatus(api, owner, url, 'available', 60_000);
    const conninfo = (await api.get(`${url}/connection-info`, owner)).body.externalConnectionString as string;
    await sql(conninfo, 'create table notes (id int primary key); insert into notes values (1), (2), (3)');

    await waitFor(
      'its first base backup',
      async () => (await api.get(`${url}/recovery`, owner)).body.recoveryStatus === 'AVAILABLE',
      90_000,
      250,
    );
    const repo = `test-run/postgres/${id}/`;
    expect(objects(`${repo}backup/${id}/`).some((key) => key.endsWith('backup.info'))).toBe(true);
    // Encrypted with a passphrase of its own (OpenSSL's salted format), not readable with the bucket's keys alone.
    const info = path.join(s3.objectsDir, BUCKET, `${repo}archive/${id}/archive.info._S3rver_object`);
    expect(readFileSync(info).subarray(0, 8).toString()).toBe('Salted__');
    // Nothing but its config, logs and locks on this machine.
    const local = path.join(server.dataDir, 'backups', 'postgres', id);
    expect(existsSync(path.join(local, 'repo'))).toBe(false);
    expect(readFileSync(path.join(local, 'pgbackrest.conf'), 'utf8')).toContain('repo1-type=s3');

    // Written after the instant: a recovery to it needs the WAL the server pushed from its namespace since the backup.
    await sleep(1100);
    const instant = new Date().toISOString();
    await sleep(1100);
    await sql(conninfo, 'insert into notes values (4), (5)');
    const recovered = await api.post(`${url}/recovery`, { restoreTime: instant }, owner);
    expect(recovered.status, recovered.text).toBe(200);
    const restoredUrl = `/v1/postgres/${recovered.body.id}`;
    await untilStatus(api, owner, restoredUrl, 'available', 120_000);
    const restored = (await api.get(`${restoredUrl}/connection-info`, owner)).body.externalConnectionString as string;
    expect(await sql(restored, 'select id from notes order by id')).toEqual([1, 2, 3]);
    expect(await sql(conninfo, 'select id from notes order by id')).toEqual([1, 2, 3, 4, 5]);
    expect(objects(`${repo}archive/${id}/`).filter((key) => /\/[0-9A-F]{24}-/.test(key)).length).toBeGreaterThan(1);

    // Its namespace's one way out is the endpoint: not Slipway's API on the same loopback, nor anything else.
    const lease = leaseOf(id);
    if (process.getuid?.() === 0) {
      expect(lease).toBeDefined();
      expect(connectsFrom(lease!.netns, '10.0.2.2', s3.port)).toBe('open');
      expect(connectsFrom(lease!.netns, '10.0.2.2', Number(new URL(server.url).port))).toBe('ECONNREFUSED');
      expect(connectsFrom(lease!.netns, '1.1.1.1', 443)).not.toBe('open');
      // What refuses it (the internet is out of reach here anyway): the ruleset loaded in its namespace.
      const rules = execFileSync(
        'nsenter',
        [`--net=${lease!.netns}`, '--', 'nft', 'list', 'table', 'inet', 'slipway'],
        {
          encoding: 'utf8',
        },
      );
      expect(rules).toContain(`ip daddr 10.0.2.2 tcp dport ${s3.port} accept`);
      expect(rules).toMatch(/^\s*jump refuse\s*$/m);
    }

    // A broken disk: its server killed and its data dir gone. It comes back from the bucket with everything archived
    // (the recovery above sealed the source: its 4 and 5 are in the archive).
    const pgdata = path.join(server.dataDir, 'datastores', id, 'pgdata');
    process.kill(Number(readFileSync(path.join(pgdata, 'postmaster.pid'), 'utf8').split('\n')[0]), 'SIGKILL');
    rmSync(pgdata, { recursive: true, force: true });
    await waitFor(
      'it back from the bucket',
      async () => {
        const info = (await api.get(`${url}/connection-info`, owner)).body.externalConnectionString as string;
        return (await sql(info, 'select id from notes order by id').catch(() => [])).length === 5;
      },
      120_000,
      500,
    );
    const back = (await api.get(`${url}/connection-info`, owner)).body.externalConnectionString as string;
    expect(await sql(back, 'select id from notes order by id')).toEqual([1, 2, 3, 4, 5]);
    await sql(back, 'insert into notes values (6)'); // and it serves writes again, on a timeline of its own

    // Deleted, its objects stay for its window; that over (moved into the past here), they go, then its record.
    expect((await api.delete(url, owner)).status).toBe(204);
    expect(objects(repo).length).toBeGreaterThan(0);
    await server.slipway.store.executeSql(
      `update deleted_datastores set backups_until = now() - interval '1 second' where id = $1`,
      [id],
    );
    await waitFor('its objects gone', async () => objects(repo).length === 0, 60_000);
    await waitFor('its record gone', async () => (await api.get(`${url}/recovery`, owner)).status === 404);
    expect(existsSync(local)).toBe(false);
  }, 300_000);
});

describe('SLIPWAY_BACKUP_S3_* settings', () => {
  const base = {
    SLIPWAY_BACKUP_S3_BUCKET: 'b',
    SLIPWAY_BACKUP_S3_ACCESS_KEY_ID: 'k',
    SLIPWAY_BACKUP_S3_SECRET_ACCESS_KEY: 's',
  };
  it('reads the endpoint as a name and port, with defaults for the rest', () => {
    expect(loadConfig(base).backupS3).toBeUndefined();
    expect(loadConfig({ ...base, SLIPWAY_BACKUP_S3_ENDPOINT: 'https://minio.lan:9000/' }).backupS3).toEqual({
      endpoint: 'minio.lan',
      port: 9000,
      bucket: 'b',
      region: 'us-east-1',
      accessKeyId: 'k',
      secretAccessKey: 's',
      prefix: '/slipway',
      uriStyle: 'host',
      caFile: undefined,
    });
    expect(
      loadConfig({ ...base, SLIPWAY_BACKUP_S3_ENDPOINT: 's3.amazonaws.com', SLIPWAY_BACKUP_S3_PATH: '/' }).backupS3,
    ).toMatchObject({ port: 443, prefix: '' });
  });
  it('refuses what pgBackRest cannot use, saying why', () => {
    const bad = (env: Record<string, string>) => () => loadConfig({ ...base, ...env });
    expect(bad({ SLIPWAY_BACKUP_S3_ENDPOINT: '10.1.2.3:9000' })).toThrow(/a host name .* not an address/);
    expect(bad({ SLIPWAY_BACKUP_S3_ENDPOINT: 'http://minio.lan' })).toThrow(/must be https/);
    expect(bad({ SLIPWAY_BACKUP_S3_ENDPOINT: 'minio.lan', SLIPWAY_BACKUP_S3_URI_STYLE: 'virtual' })).toThrow(
      /host or path/,
    );
    expect(bad({ SLIPWAY_BACKUP_S3_ENDPOINT: 'minio.lan', SLIPWAY_BACKUP_S3_PATH: 'p\nrepo1-path=/x' })).toThrow(
      /SLIPWAY_BACKUP_S3_PATH must not hold control characters/,
    );
    expect(() => loadConfig({ SLIPWAY_BACKUP_S3_ENDPOINT: 'minio.lan', SLIPWAY_BACKUP_S3_BUCKET: 'b' })).toThrow(
      /SLIPWAY_BACKUP_S3_ACCESS_KEY_ID must be set/,
    );
  });
});
