import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, realpathSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawnDetached } from '../../lib/exec.js';
import { rotateLogIfLarge } from '../../lib/log-file.js';
import { freePort } from '../../runtime/local/ports.js';
import { readStat } from '../../runtime/local/proc.js';
import type pg from 'pg';
import type { BackupS3 } from '../../model/settings.js';
import { PortTakenError, type Placement, type PostgresProvisioner, type PostgresSpec } from '../types.js';
import { findPostgresInstalls, sortVersions, type PostgresInstall } from './binaries.js';
import {
  asRunUser,
  findSwitchUserTools,
  postgresCommand,
  userNameOf,
  SUPERUSER,
  type RunContext,
  type RunUser,
} from './commands.js';
import {
  createTemplates,
  datastoreLayout,
  dirAccess,
  privateDir,
  removeLegacySocketLink,
  SOCKET_NAME_MAX,
  writeServerFiles,
  type DatastoreLayout,
} from './local-files.js';
import { createServerNetworking, LOOPBACK, type Listener, type ServerNetwork } from '../server-network.js';
import { runningProcess } from '../process-state.js';
import { withSocketDir } from '../unix-socket.js';
import { localPostgresAccess } from './local-access.js';
import { backupMethods, createLocalBackups, findPgbackrest } from './backups.js';
import { scramVerifies } from './scram.js';
import { CONNECT_TIMEOUT_MS, databaseExists, ident, quietSession, roleExists, upsertRole, withClient } from './sql.js';
import { logSince } from '../server-output.js';
import {
  clearForeignLockFile,
  findServer,
  logSize,
  listenOf,
  stopServer,
  waitReady,
  type ServerProcess,
} from './server-process.js';

export interface LocalPostgresOptions {
  dataDir: string;
  /** The unprivileged user servers run as; required when Slipway runs as root (Postgres refuses root). */
  runAs?: RunUser;
  /** Searched before PATH and /usr/lib/postgresql/<major>/bin. */
  binDirs?: string[];
  /** Namespaces mode: each server in a namespace of its own on its workspace's network (the runtime's attachServer/release). */
  network?: ServerNetwork | undefined;
  /** Where pgBackRest keeps each datastore's backups (SLIPWAY_BACKUP_DIR); unset, or no pgbackrest: no backups. */
  backupDir?: string | undefined;
  /** Their repositories in this bucket instead (the backup dir keeps their configs and logs). */
  backupS3?: BackupS3 | undefined;
  /** The passphrase each repository in the bucket is encrypted with (required with backupS3). */
  backupCipher?: ((id: string) => string) | undefined;
}

/** Backups on S3 are encrypted: refused without a passphrase per repository. */
const cipherOf = (pass: ((id: string) => string) | undefined) => {
  if (!pass) throw new Error('backups on S3 need a passphrase for each repository (backupCipher)');
  return pass;
};

/** Where a server with a namespace of its own listens (on the shared network: a free port of its own). */
const POSTGRES_PORT = 5432;
/** Crash recovery replays WAL before a server accepts connections; give it time. */
const START_TIMEOUT_MS = 60_000;
/** What postgres logs (then "could not create any TCP/IP sockets") when its TCP port is someone else's. */
const PORT_TAKEN = /could not bind IPv[46] address .*Address already in use/i;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** What Placement.state holds for a local server: its postmaster. */
type LocalState = Partial<ServerProcess>;

/**
 * One real postgres server per datastore under <dataDir>/datastores/<id>/ (pgdata/, socket/, postgres.log), run
 * detached so it outlives Slipway. It listens in a namespace of its own at 5432 (namespaces mode, see server-network.ts)
 * or on 127.0.0.1 at a port fixed at create (shared network). Only the datastore's own user may log in over TCP
 * (SCRAM); Slipway administers it as a superuser over a private unix socket.
 */
export function createLocalPostgres(opts: LocalPostgresOptions): PostgresProvisioner {
  if (process.getuid?.() === 0 && !opts.runAs)
    throw new Error('Postgres refuses to run as root: give the local Postgres provisioner an unprivileged runAs user');
  if (opts.runAs && process.getuid?.() !== 0) throw new Error('runAs needs Slipway to run as root');
  const installs = findPostgresInstalls(opts.binDirs);
  mkdirSync(opts.dataDir, { recursive: true, mode: 0o700 });
  const dataDir = realpathSync(opts.dataDir);
  const ctx: RunContext = { dataDir, runAs: opts.runAs, tools: opts.runAs ? findSwitchUserTools() : undefined };
  const templates = createTemplates(ctx);
  const adminOsUser = os.userInfo().username;
  const net = createServerNetworking(opts.network, POSTGRES_PORT);
  const pgbackrest = opts.backupDir ? findPgbackrest() : undefined;
  const backups =
    opts.backupDir && pgbackrest
      ? createLocalBackups({
          ctx,
          pgbackrest,
          backupDir: opts.backupDir,
          s3: opts.backupS3 && { ...opts.backupS3, cipherPass: cipherOf(opts.backupCipher) },
          layoutOf: (id) => datastoreLayout(dataDir, id),
        })
      : undefined;
  /** Whether the server archives its WAL (a plan with backups, where pgBackRest is installed). */
  const archives = (spec: PostgresSpec) => !!backups && (spec.backupRetentionDays ?? 0) > 0;
  const backupOsUser = opts.runAs ? userNameOf(opts.runAs.uid) : adminOsUser;

  function installFor(version: string): PostgresInstall {
    const install = installs.get(version);
    if (install) return install;
    throw new Error(
      `PostgreSQL ${version} is not installed here (installed: ${sortVersions(installs.keys()).join(', ') || 'none'})`,
    );
  }

  const layoutOf = (spec: PostgresSpec) => datastoreLayout(dataDir, spec.id);
  const placementOf = (listen: Listener, server: ServerProcess): Placement =>
    net.placement(listen, { pid: server.pid, startTime: server.startTime });
  const stateOf = (placement: Placement) => placement.state as LocalState;
  /** The server's config files (and its backup repository's, when it archives); true when they changed. */
  function writeFiles(
    spec: PostgresSpec,
    layout: DatastoreLayout,
    listen: Pick<Listener, 'host' | 'port' | 'internalHost'>,
  ) {
    if (archives(spec)) backups!.prepare(spec, listen.port);
    const archiving = archives(spec) ? backups!.archiving(spec).command : undefined;
    return writeServerFiles(ctx, spec, layout, listen, adminOsUser, { archiveCommand: archiving, backupOsUser });
  }

  /**
   * Runs `fn` on Slipway's own connection: the superuser on the server's unix socket, let in by peer credentials (the
   * kernel tells the server which OS user connects; pg_ident admits only Slipway's). No secret is sent, and nothing but
   * the server can listen there: the socket's dir is the run user's, 0700, inside Slipway's 0700 datastore dir. Never
   * TCP, whose port anyone on the machine may have bound while the server was down.
   */
  const asAdmin = <T>(
    spec: PostgresSpec,
    port: number,
    fn: (client: pg.Client) => Promise<T>,
    config: pg.ClientConfig = {},
  ): Promise<T> =>
    withSocketDir(layoutOf(spec).socketDir, SOCKET_NAME_MAX, (host) =>
      withClient({ host, port, user: SUPERUSER, database: 'postgres', ...config }, fn),
    );

  /** Starts the server detached; retried while backends of a killed postmaster still hold its shared memory. */
  async function launch(
    install: PostgresInstall,
    layout: DatastoreLayout,
    listen: Listener,
    backupDirs: string[],
    hosts: string | undefined,
  ): Promise<ServerProcess> {
    const deadline = Date.now() + START_TIMEOUT_MS;
    for (;;) {
      clearForeignLockFile(layout.pgdata);
      const logFrom = logSize(layout.log);
      const command = listen.wrap(
        asRunUser(
          ctx,
          { ...dirAccess(ctx, layout.pgdata, [layout.socketDir, ...backupDirs]), hosts },
          postgresCommand(install, layout.pgdata),
        ),
      );
      const pid = await spawnDetached(command, { stdoutPath: layout.log, stderrPath: layout.log }, () => undefined);
      // The postmaster's pid (unshare, sh and setpriv exec each other in the same process).
      const server = { pid, startTime: readStat(pid)?.startTime ?? '' };
      const outcome = await waitReady(layout.pgdata, server, deadline - Date.now());
      if (outcome.ready) return server;
      if (!outcome.exited) await stopServer(server, 'immediate');
      const log = logSince(layout.log, logFrom);
      if (outcome.exited && /is still in use/.test(log) && Date.now() < deadline) {
        await sleep(100);
        continue;
      }
      const why = outcome.exited ? 'exited during startup' : `was not ready within ${START_TIMEOUT_MS / 1000} s`;
      if (outcome.exited && PORT_TAKEN.test(log))
        throw new PortTakenError(
          listen.port,
          `the port ${listen.port} of postgres is taken by another process: ${log}`,
        );
      throw new Error(`postgres ${why}: ${log || '(no output)'}`);
    }
  }

  async function start(spec: PostgresSpec, placement: Placement): Promise<Placement> {
    const install = installFor(spec.version);
    const layout = layoutOf(spec);
    privateDir(ctx, layout.dir, false);
    privateDir(ctx, layout.socketDir, true);
    const lost = !existsSync(path.join(layout.pgdata, 'PG_VERSION'));
    if (lost && !(archives(spec) && (await backups!.restoreOwn(spec, placement.port))))
      throw new Error(`the data of ${spec.id} is missing (${layout.pgdata}), and no backup of it was found`);
    const running = findServer(layout.pgdata, stateOf(placement));
    if (running) {
      // Adopted where it listens (its lock file says), in its namespace if it has one; it may still be starting up.
      const outcome = await waitReady(layout.pgdata, running, START_TIMEOUT_MS);
      if (!outcome.ready)
        throw new Error(
          `postgres (pid ${running.pid}) is running but not ready: ${logSince(layout.log, 0).split('\n').slice(-5).join('\n')}`,
        );
      const at = listenOf(layout.pgdata);
      if (at && net.fits(at.host)) {
        const adopted = net.running(spec, at);
        writeFiles(spec, layout, adopted);
        return placementOf(adopted, running);
      }
      // On the other network (Slipway's network mode changed since): restarted on this one.
      await stopServer(running, 'fast');
    }
    // Its archive_command writes to its repository (and, while a restored server replays, reads the source's): their
    // dirs, and on S3 a way out to the endpoint, its name pinned in the server's /etc/hosts.
    const reachesBackups = !!backups && (archives(spec) || !!spec.restoredFrom);
    const listen = await net.listen(spec, placement, reachesBackups ? await backups!.exits() : []);
    writeFiles(spec, layout, listen);
    const seen = reachesBackups ? backups!.archiving(spec).dirs : [];
    const endpoint = listen.exits?.[0];
    const hosts = endpoint && backups!.pinEndpoint(path.join(layout.dir, 'hosts'), endpoint);
    try {
      return placementOf(listen, await launch(install, layout, listen, seen, hosts));
    } catch (err) {
      await net.release(spec.id);
      throw err;
    }
  }

  const startFresh = (spec: PostgresSpec) => net.startFresh((at) => start(spec, at));

  /** Whether the role's stored SCRAM verifier is of spec.password; the answer, either way, is remembered (PBKDF2 is slow on purpose). */
  const verified = new Map<string, { key: string; matches: boolean }>();
  function passwordMatches(spec: PostgresSpec, stored: string | null): boolean {
    const key = createHash('sha256').update(`${stored}\0${spec.password}`).digest('base64');
    const known = verified.get(spec.id);
    if (known?.key === key) return known.matches;
    const matches = scramVerifies(stored, spec.password);
    verified.set(spec.id, { key, matches });
    return matches;
  }

  /** The datastore's role and database, made over the socket; converges when re-run. */
  async function bootstrap(spec: PostgresSpec, placement: Placement): Promise<void> {
    await asAdmin(spec, placement.port, async (client) => {
      await quietSession(client);
      const role = { name: spec.databaseUser, password: spec.password, connectionLimit: -1, login: true };
      await upsertRole(client, role, await roleExists(client, spec.databaseUser));
      if (!(await databaseExists(client, spec.databaseName))) {
        await client.query(`CREATE DATABASE ${ident(spec.databaseName)} OWNER ${ident(spec.databaseUser)}`);
      }
    });
  }

  return {
    kind: 'local',
    versions: () => sortVersions(installs.keys()),

    async create(spec) {
      const install = installFor(spec.version);
      const layout = layoutOf(spec);
      mkdirSync(path.dirname(layout.dir), { recursive: true, mode: 0o700 });
      privateDir(ctx, layout.dir, false);
      if (spec.restoredFrom && !existsSync(path.join(layout.pgdata, 'PG_VERSION'))) {
        if (!backups) throw new Error('point-in-time recovery needs pgBackRest and SLIPWAY_BACKUP_DIR');
        await backups.restore({ ...spec, restoredFrom: spec.restoredFrom });
      } else if (!existsSync(layout.pgdata)) await templates.copyInto(install, layout);
      // A server left running by an interrupted create is adopted where it listens.
      const placement = findServer(layout.pgdata, {})
        ? await start(spec, { host: LOOPBACK, port: listenOf(layout.pgdata)?.port ?? (await freePort()), state: {} })
        : await startFresh(spec);
      await bootstrap(spec, placement);
      return placement;
    },

    start,

    async stop(spec, placement) {
      const server = findServer(layoutOf(spec).pgdata, stateOf(placement));
      if (server) await stopServer(server, 'fast');
      await net.release(spec.id);
    },

    /**
     * On the admin socket, sending nothing secret: the server answers on its port, the role may log in with a SCRAM
     * verifier of spec.password, and the database takes connections. A server that answers there also holds its TCP
     * port: postgres exits at startup when it cannot bind its one listen address.
     */
    async check(spec, placement) {
      rotateLogIfLarge(layoutOf(spec).log); // the check runs every few seconds: the log's size is kept here
      if (!net.fits(placement.host)) return false; // on the other network: its clients cannot reach it
      try {
        return await asAdmin(
          spec,
          placement.port,
          async (client) => {
            const { rows } = await client.query<{
              listen: string;
              port: string;
              login: boolean;
              stored: string | null;
              db: boolean;
            }>(
              `select current_setting('listen_addresses') as listen, current_setting('port') as port, r.rolcanlogin as login, r.rolpassword as stored,
                    exists (select 1 from pg_database where datname = $2 and datallowconn) as db
               from pg_authid r where r.rolname = $1`,
              [spec.databaseUser, spec.databaseName],
            );
            const row = rows[0];
            // Where it listens is where its clients are told (a start whose placement was never saved moved it).
            return (
              !!row &&
              row.listen === placement.host &&
              Number(row.port) === placement.port &&
              row.login &&
              row.db &&
              passwordMatches(spec, row.stored)
            );
          },
          { query_timeout: CONNECT_TIMEOUT_MS },
        );
      } catch {
        return false;
      }
    },

    /** Sizes live in postgresql.conf and take a restart (shared_buffers, max_connections); nothing changed, no restart. */
    async update(spec, placement) {
      const layout = layoutOf(spec);
      const server = findServer(layout.pgdata, stateOf(placement));
      const at = (server && listenOf(layout.pgdata)) || placement;
      const listen = net.running(spec, at);
      const changed = writeFiles(spec, layout, listen);
      if (server && !changed && net.fits(at.host)) return placementOf(listen, server);
      if (server) await stopServer(server, 'fast');
      return start(spec, placement);
    },

    async destroy(spec, placement) {
      const layout = layoutOf(spec);
      const server = findServer(layout.pgdata, stateOf(placement));
      if (server) await stopServer(server, 'immediate');
      await net.release(spec.id);
      rmSync(layout.dir, { recursive: true, force: true }); // its backups stay: dropBackups removes them
      removeLegacySocketLink(spec.id);
      verified.delete(spec.id);
    },

    /** Its port was bound by someone else while it was down (shared network): postgresql.conf is rewritten for a new one, and it starts there. */
    relocate: (spec) => startFresh(spec),
    serverProcess: (placement) => runningProcess(placement.state),

    ...(backups &&
      backupMethods(backups, archives, (spec, placement, text) =>
        asAdmin(spec, placement.port, async (client) => (await client.query(text)).rows),
      )),

    ...localPostgresAccess({
      asAdmin,
      socketDir: (spec) => layoutOf(spec).socketDir,
      postgresBin: (spec) => installFor(spec.version).postgres,
    }),
  };
}
