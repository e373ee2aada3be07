/**
 * Runs once before the suite: a migrated PGlite store that test servers start from (helpers/server.ts), made by the
 * real openStore. A fresh PGlite spends about 4 s in its initdb; every test server did that on its own.
 */
import { chmodSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import type { TestProject } from 'vitest/node';
import { loadConfig } from '../src/app/config.js';
import { openStore } from '../src/store/db.js';

declare module 'vitest' {
  export interface ProvidedContext {
    /** The data dir of a migrated, closed PGlite store to copy (its `pglite` subdir). */
    pgliteTemplate: string;
    /**
     * SLIPWAY_NODE_CACHE_DIR for test servers: one dir for the whole run, so a Node.js release is downloaded once
     * (SLIPWAY_TEST_NODE_CACHE_DIR keeps it across runs).
     */
    nodeCacheDir: string;
    /** With TEST_DATABASE_URL: a migrated database that each test database is copied from (createTestDatabase). */
    pgTemplate: string;
  }
}

export default async function setup(project: TestProject) {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'slipway-template-'));
  const store = await openStore(loadConfig({ SLIPWAY_DATA_DIR: dataDir, DATABASE_URL: '', SLIPWAY_SECRET_KEY: '' }));
  await store.close();
  project.provide('pgliteTemplate', dataDir);
  // On Postgres the same: migrated once by the real openStore, then copied (CREATE DATABASE … TEMPLATE) per server.
  const pgTemplate = process.env.TEST_DATABASE_URL ? await migratedTemplate(process.env.TEST_DATABASE_URL) : undefined;
  project.provide('pgTemplate', pgTemplate?.name ?? '');
  const kept = process.env.SLIPWAY_TEST_NODE_CACHE_DIR;
  const nodeCacheDir = kept ? path.resolve(kept) : mkdtempSync(path.join(tmpdir(), 'slipway-node-cache-'));
  mkdirSync(nodeCacheDir, { recursive: true });
  chmodSync(nodeCacheDir, 0o755); // builds and apps read it as nobody
  project.provide('nodeCacheDir', nodeCacheDir);
  return () => {
    rmSync(dataDir, { recursive: true, force: true });
    if (!kept) rmSync(nodeCacheDir, { recursive: true, force: true });
    return pgTemplate?.drop();
  };
}

async function migratedTemplate(adminUrl: string) {
  const name = `slipway_tpl_${Date.now().toString(36)}_${Math.random().toString(36).slice(2, 8)}`;
  const admin = async (sql: string) => {
    const c = new pg.Client({ connectionString: adminUrl });
    await c.connect();
    await c.query(sql).finally(() => c.end());
  };
  await admin(`create database ${name}`);
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  const dataDir = mkdtempSync(path.join(tmpdir(), 'slipway-pg-template-'));
  const store = await openStore(
    loadConfig({ SLIPWAY_DATA_DIR: dataDir, DATABASE_URL: url.toString(), SLIPWAY_SECRET_KEY: '' }),
  );
  await store.close();
  rmSync(dataDir, { recursive: true, force: true });
  return { name, drop: () => admin(`drop database if exists ${name} with (force)`) };
}
