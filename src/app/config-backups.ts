import type { BackupS3 } from '../model/settings.js';

type Env = Record<string, string | undefined>;
const NAME = /^[A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?$/;

/**
 * SLIPWAY_BACKUP_S3_*: local Postgres datastores' pgBackRest repositories in an S3-compatible bucket instead of
 * SLIPWAY_BACKUP_DIR (docs/datastores.md, "Backups on S3"). Unset endpoint: none. The endpoint is a host name (with a
 * port): pgBackRest checks the server's certificate against it, and matches names only.
 */
export function backupS3Settings(env: Env): BackupS3 | undefined {
  const raw = env.SLIPWAY_BACKUP_S3_ENDPOINT?.trim();
  if (!raw) return undefined;
  // Each is written into pgBackRest's config, a line per setting: a newline would add settings of its own.
  for (const [name, value] of Object.entries(env))
    if (name.startsWith('SLIPWAY_BACKUP_S3_') && /[\u0000-\u001f\u007f]/.test(value ?? ''))
      throw new Error(`${name} must not hold control characters (a line break, a tab)`);
  const { hostname, port } = new URL(/^https?:\/\//.test(raw) ? raw : `https://${raw}`);
  if (raw.startsWith('http://'))
    throw new Error('SLIPWAY_BACKUP_S3_ENDPOINT must be https: pgBackRest speaks TLS to S3 only');
  if (!NAME.test(hostname) || /^[\d.]+$/.test(hostname))
    throw new Error(
      `SLIPWAY_BACKUP_S3_ENDPOINT must be a host name (with an optional :port), got "${raw}": pgBackRest verifies the certificate against a name, not an address`,
    );
  const required = (name: string) => {
    const value = env[name]?.trim();
    if (!value) throw new Error(`${name} must be set with SLIPWAY_BACKUP_S3_ENDPOINT`);
    return value;
  };
  const uriStyle = env.SLIPWAY_BACKUP_S3_URI_STYLE || 'host';
  if (uriStyle !== 'host' && uriStyle !== 'path')
    throw new Error(`SLIPWAY_BACKUP_S3_URI_STYLE must be host or path, got "${uriStyle}"`);
  const prefix = `/${(env.SLIPWAY_BACKUP_S3_PATH || 'slipway').replace(/^\/+|\/+$/g, '')}`;
  return {
    endpoint: hostname,
    port: port ? Number(port) : 443,
    bucket: required('SLIPWAY_BACKUP_S3_BUCKET'),
    region: env.SLIPWAY_BACKUP_S3_REGION || 'us-east-1',
    accessKeyId: required('SLIPWAY_BACKUP_S3_ACCESS_KEY_ID'),
    secretAccessKey: required('SLIPWAY_BACKUP_S3_SECRET_ACCESS_KEY'),
    prefix: prefix === '/' ? '' : prefix,
    uriStyle,
    caFile: env.SLIPWAY_BACKUP_S3_CA_FILE || undefined,
  };
}
