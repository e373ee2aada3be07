import type { Config } from '../model/settings.js';
import { createKeyValueProvisioner, KEY_VALUE_NOT_CONFIGURED } from './keyvalue/index.js';
import { createPostgresProvisioner, POSTGRES_NOT_CONFIGURED } from './postgres/index.js';
import type { ServerNetwork } from './server-network.js';

const LOCAL_OFF = 'Datastore servers on this machine are turned off (SLIPWAY_LOCAL_DATASTORES=0): set';

/**
 * The datastore provisioners this configuration gives: an existing server where an admin URL is
 * set, else a local server per datastore (unless turned off), and, for each kind without one, the
 * message the API's 501 answers with.
 */
export function chooseProvisioners(
  config: Pick<Config, 'dataDir' | 'postgresAdminUrl' | 'redisAdminUrl' | 'localDatastores' | 'backupDir' | 'backupS3'>,
  local: {
    runAs?: { uid: number; gid: number };
    network?: ServerNetwork;
    /** The passphrase of a datastore's repository on S3. */
    backupCipher?: (id: string) => string;
  },
) {
  const opts = { dataDir: config.dataDir, runAs: local.runAs, network: local.network };
  return {
    postgres:
      config.postgresAdminUrl || config.localDatastores
        ? createPostgresProvisioner({
            ...opts,
            adminUrl: config.postgresAdminUrl,
            backupDir: config.backupDir,
            backupS3: config.backupS3,
            backupCipher: local.backupCipher,
          })
        : undefined,
    keyValue:
      config.redisAdminUrl || config.localDatastores
        ? createKeyValueProvisioner({ ...opts, adminUrl: config.redisAdminUrl })
        : undefined,
    missing: config.localDatastores
      ? { postgres: POSTGRES_NOT_CONFIGURED, keyValue: KEY_VALUE_NOT_CONFIGURED }
      : {
          postgres: `${LOCAL_OFF} SLIPWAY_POSTGRES_ADMIN_URL to use an existing server.`,
          keyValue: `${LOCAL_OFF} SLIPWAY_REDIS_ADMIN_URL to use an existing server.`,
        },
  };
}
