import type { PlanSize, PostgresSpec } from '../types.js';
import { SUPERUSER } from './commands.js';

/** A WAL segment is archived at least this often (archive_timeout): what a recovery to "now" may miss at most. */
export const ARCHIVE_TIMEOUT_SECONDS = 60;

/** The ident map that lets Slipway's OS user (and only it) in as the superuser, over the private socket. */
const ADMIN_MAP = 'slipway';

/** A string in postgresql.conf / pg_hba.conf syntax. */
const confString = (value: string) => `'${value.replaceAll("'", "''")}'`;
const hbaName = (name: string) => `"${name.replaceAll('"', '""')}"`;
/** A role name that pg_hba.conf takes unquoted (what Slipway makes). */
const PLAIN_NAME = /^[a-z_][a-z0-9_]*$/;

export interface ServerSettings {
  /** 127.0.0.1 on the shared network, else its namespace's address. */
  listenAddress: string;
  port: number;
  socketDir: string;
  size: PlanSize;
  /** Continuous archiving: the command that takes each finished WAL segment (pgBackRest's archive-push). */
  archiveCommand?: string | undefined;
}

/**
 * The whole postgresql.conf, rewritten before every start (so a plan change is a rewrite and a restart). Small-server
 * defaults; memory from the plan: shared_buffers a quarter of it (at least 16 MB), the planner told about the rest.
 * Superusers keep a few of max_connections for themselves (Slipway's administration), as on any Postgres.
 */
export function postgresqlConf({ listenAddress, port, socketDir, size, archiveCommand }: ServerSettings): string {
  const mb = (n: number) => `${Math.max(1, Math.floor(n))}MB`;
  const settings: Record<string, string | number> = {
    listen_addresses: confString(listenAddress),
    port,
    unix_socket_directories: confString(socketDir),
    unix_socket_permissions: '0700',
    max_connections: size.maxConnections,
    superuser_reserved_connections: Math.max(0, Math.min(3, size.maxConnections - 1)),
    shared_buffers: mb(Math.max(16, size.memoryMb / 4)),
    effective_cache_size: mb(Math.max(32, (size.memoryMb * 3) / 4)),
    maintenance_work_mem: mb(Math.min(256, Math.max(16, size.memoryMb / 16))),
    work_mem: '4MB',
    max_wal_size: '512MB',
    min_wal_size: '64MB',
    password_encryption: 'scram-sha-256',
    dynamic_shared_memory_type: 'posix',
    huge_pages: 'off',
    logging_collector: 'off',
    log_destination: confString('stderr'),
    log_line_prefix: confString('%m [%p] %q%u@%d '),
    log_checkpoints: 'off',
    log_timezone: confString('UTC'),
    timezone: confString('UTC'),
    datestyle: confString('iso, mdy'),
    lc_messages: confString('C.UTF-8'),
    lc_monetary: confString('C.UTF-8'),
    lc_numeric: confString('C.UTF-8'),
    lc_time: confString('C.UTF-8'),
    default_text_search_config: confString('pg_catalog.english'),
    // A segment at least every ARCHIVE_TIMEOUT_SECONDS, so an idle server's last writes are restorable too.
    ...(archiveCommand
      ? { archive_mode: 'on', archive_command: confString(archiveCommand), archive_timeout: ARCHIVE_TIMEOUT_SECONDS }
      : { archive_mode: 'off' }),
  };
  const lines = Object.entries(settings).map(([name, value]) => `${name} = ${value}`);
  return [
    '# Written by Slipway before every start: changes here are overwritten (the plan decides the sizes).',
    ...lines,
    '',
  ].join('\n');
}

/**
 * Over TCP only the datastore's user, only to its database, only with a SCRAM password (never cleartext or md5: the
 * apps' password never crosses the wire, and the stored verifier is SCRAM). The superuser only over the unix socket,
 * and only for Slipway's own OS user, by peer authentication through the map: the kernel vouches for the connecting
 * user, so Slipway sends no password at all. That is safe because nothing else can listen there: the socket's dir is
 * the run user's, 0700, inside Slipway's 0700 datastore dir, reachable only by Slipway and this server (a TCP port, by
 * contrast, can be bound by anyone on the machine while the server is down). `clients`: where TCP logins may come from,
 * loopback on the shared network, else `samenet`, the workspace's private network its namespace is on (nothing else
 * can reach it there).
 */
export const LOOPBACK_CLIENTS = ['127.0.0.1/32', '::1/128'];
export function hbaConf(
  spec: Pick<PostgresSpec, 'databaseName' | 'databaseUser'>,
  clients: string[] = LOOPBACK_CLIENTS,
): string {
  const db = hbaName(spec.databaseName);
  const user = hbaName(spec.databaseUser);
  return [
    '# Written by Slipway before every start.',
    `local all ${hbaName(SUPERUSER)} peer map=${ADMIN_MAP}`,
    ...clients.map((from) => `host ${db} ${user} ${from} scram-sha-256`),
    // Its extra credentials (/credentials) are members of it; `+` works unquoted only, so only for a plain name.
    ...(PLAIN_NAME.test(spec.databaseUser)
      ? clients.map((from) => `host ${db} +${spec.databaseUser} ${from} scram-sha-256`)
      : []),
    '',
  ].join('\n');
}

/** `backupOsUser`: the run user, as which pgBackRest takes base backups (over the same private socket). */
export const identConf = (adminOsUser: string, backupOsUser?: string): string =>
  [
    '# Written by Slipway before every start.',
    `${ADMIN_MAP} ${hbaName(adminOsUser)} ${hbaName(SUPERUSER)}`,
    ...(backupOsUser && backupOsUser !== adminOsUser
      ? [`${ADMIN_MAP} ${hbaName(backupOsUser)} ${hbaName(SUPERUSER)}`]
      : []),
    '',
  ].join('\n');
