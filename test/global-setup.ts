/**
 * Runs once before the suite: a migrated PGlite store that test servers start from (helpers/server.ts), made by the
 * real openStore. A fresh PGlite spends about 4 s in its initdb; every test server did that on its own.
 */
import { chmodSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
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
  }
}

export default async function setup(project: TestProject) {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'slipway-template-'));
  const store = await openStore(loadConfig({ SLIPWAY_DATA_DIR: dataDir, DATABASE_URL: '', SLIPWAY_SECRET_KEY: '' }));
  await store.close();
  project.provide('pgliteTemplate', dataDir);
  const kept = process.env.SLIPWAY_TEST_NODE_CACHE_DIR;
  const nodeCacheDir = kept ? path.resolve(kept) : mkdtempSync(path.join(tmpdir(), 'slipway-node-cache-'));
  mkdirSync(nodeCacheDir, { recursive: true });
  chmodSync(nodeCacheDir, 0o755); // builds and apps read it as nobody
  project.provide('nodeCacheDir', nodeCacheDir);
  return () => {
    rmSync(dataDir, { recursive: true, force: true });
    if (!kept) rmSync(nodeCacheDir, { recursive: true, force: true });
  };
}
