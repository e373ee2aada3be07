import type { BackupS3 } from '../../model/settings.js';
import type { ServerNetwork } from '../server-network.js';
import type { PostgresProvisioner } from '../types.js';
import { createClusterPostgres } from './cluster.js';
import { createLocalPostgres } from './local.js';

/** What the API answers (501 not_configured) when createPostgresProvisioner found no way to run Postgres datastores. */
export const POSTGRES_NOT_CONFIGURED =
  'Postgres datastores are not enabled on this Slipway: install the PostgreSQL server binaries (initdb and postgres, ' +
  'e.g. `apt-get install postgresql`) to run a server per datastore (when Slipway runs as root it also needs the ' +
  'unprivileged user that runs apps, to run them as), or set SLIPWAY_POSTGRES_ADMIN_URL ' +
  '(postgres://<superuser>:<password>@<host>:<port>/postgres) to give each datastore a role and a database on an ' +
  'existing Postgres server; then restart Slipway.';

/**
 * Cluster (a role and a database per datastore on the server at adminUrl, SLIPWAY_POSTGRES_ADMIN_URL) when adminUrl
 * is set, else local (a server per datastore) when the server binaries are installed, else undefined.
 */
export function createPostgresProvisioner(opts: {
  dataDir: string;
  adminUrl?: string | undefined;
  runAs?: { uid: number; gid: number } | undefined;
  /** Namespaces mode: a namespace of its own for each local server. */
  network?: ServerNetwork | undefined;
  /** Local servers' backups (pgBackRest), where pgbackrest is installed. */
  backupDir?: string | undefined;
  /** Their repositories on S3 instead of under backupDir. */
  backupS3?: BackupS3 | undefined;
  /** The passphrase each repository on S3 is encrypted with. */
  backupCipher?: ((id: string) => string) | undefined;
}): PostgresProvisioner | undefined {
  if (opts.adminUrl) return createClusterPostgres({ adminUrl: opts.adminUrl });
  // Postgres will not run as root, so a root Slipway without a user to run it as cannot have local servers.
  if (process.getuid?.() === 0 && !opts.runAs) return undefined;
  const local = createLocalPostgres({
    dataDir: opts.dataDir,
    runAs: opts.runAs,
    network: opts.network,
    backupDir: opts.backupDir,
    backupS3: opts.backupS3,
    backupCipher: opts.backupCipher,
  });
  return local.versions().length > 0 ? local : undefined;
}
