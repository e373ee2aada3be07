/**
 * Runs once before the suite: a migrated PGlite store that test servers start from (helpers/server.ts), made by the
 * real openStore. A fresh PGlite spends about 4 s in its initdb; every test server did that on its own.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { TestProject } from 'vitest/node';
import { loadConfig } from '../src/config.js';
import { openStore } from '../src/store/db.js';

declare module 'vitest' {
  export interface ProvidedContext {
    /** The data dir of a migrated, closed PGlite store to copy (its `pglite` subdir). */
    pgliteTemplate: string;
  }
}

export default async function setup(project: TestProject) {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'slipway-template-'));
  const store = await openStore(loadConfig({ SLIPWAY_DATA_DIR: dataDir, DATABASE_URL: '', SLIPWAY_SECRET_KEY: '' }));
  await store.close();
  project.provide('pgliteTemplate', dataDir);
  return () => rmSync(dataDir, { recursive: true, force: true });
}
