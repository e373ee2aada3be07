/**
 * `npm run backup -- <file>` and `npm run restore -- <file>` (docs/operations.md, "Backing up Slipway"): Slipway's
 * own state, with the settings Slipway itself would start with (SLIPWAY_DATA_DIR, DATABASE_URL).
 */
import { loadConfig } from './app/config.js';
import { restoreStateBackup, writeStateBackup } from './app/state-backup.js';
import { lockDataDir } from './lib/data-dir-lock.js';
import { chooseDataDir } from './runtime/local/data-dir.js';
import { openStore } from './store/db.js';

const USAGE = 'usage: npm run backup -- <file>   |   npm run restore -- <file> (into an empty SLIPWAY_DATA_DIR)';

async function backup(file: string) {
  const loaded = loadConfig();
  const { dataDir } = chooseDataDir(loaded, { explicit: !!process.env.SLIPWAY_DATA_DIR });
  // The embedded store opens in one process at a time: a running Slipway takes its own backups (SLIPWAY_STATE_BACKUP_DIR).
  let unlock: (() => void) | undefined;
  if (!loaded.databaseUrl) {
    try {
      unlock = lockDataDir(dataDir);
    } catch (err) {
      throw new Error(
        `${(err as Error).message}. With the embedded store, back up a stopped Slipway, or let the running one take its own backups (SLIPWAY_STATE_BACKUP_DIR)`,
      );
    }
  }
  try {
    const store = await openStore({ dataDir, databaseUrl: loaded.databaseUrl });
    try {
      await writeStateBackup({ store, dataDir, file });
    } finally {
      await store.close();
    }
  } finally {
    unlock?.();
  }
  console.log(`slipway: backed up ${dataDir}${loaded.databaseUrl ? ' and DATABASE_URL' : ''} to ${file}`);
}

async function restore(file: string) {
  const loaded = loadConfig();
  const { dataDir } = chooseDataDir(loaded, { explicit: !!process.env.SLIPWAY_DATA_DIR });
  const manifest = await restoreStateBackup({ file, dataDir, databaseUrl: loaded.databaseUrl });
  console.log(
    `slipway: restored the backup of ${manifest.createdAt} into ${dataDir}; start Slipway on it (npm start) and the live deploys start again`,
  );
}

const [command, file] = process.argv.slice(2);
if (!file || (command !== 'backup' && command !== 'restore')) {
  console.error(USAGE);
  process.exit(2);
}
(command === 'backup' ? backup(file) : restore(file)).then(
  () => process.exit(0),
  (err: Error) => {
    console.error(`slipway: ${command} failed: ${err.message}`);
    process.exit(1);
  },
);
