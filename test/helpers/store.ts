import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { loadConfig } from '../../src/app/config.js';
import { openStore, type Store } from '../../src/store/db.js';
import { createRepos, type Repos } from '../../src/store/repos/index.js';
import { createTestDatabase, seedPglite, TEST_DATABASE_URL } from './server.js';

/** A fresh, migrated store of the suite's kind (PGlite, or a new database on TEST_DATABASE_URL), and its removal. */
export async function openTestStore(prefix: string): Promise<{ store: Store; repos: Repos; remove(): Promise<void> }> {
  const dataDir = mkdtempSync(path.join(tmpdir(), prefix));
  const database = TEST_DATABASE_URL ? await createTestDatabase(TEST_DATABASE_URL) : undefined;
  if (!database) seedPglite(dataDir);
  const store = await openStore(
    loadConfig({ SLIPWAY_DATA_DIR: dataDir, DATABASE_URL: database?.url ?? '', SLIPWAY_SECRET_KEY: '' }),
  );
  return {
    store,
    repos: createRepos(store.db),
    async remove() {
      await store.close();
      await database?.drop();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
