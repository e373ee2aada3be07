import { existsSync, mkdirSync, realpathSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawnDetached } from '../../lib/exec.js';
import { rotateLogIfLarge } from '../../lib/log-file.js';
import { freePort } from '../../runtime/local/ports.js';
import { readStat } from '../../runtime/local/proc.js';
import type { Placement, PostgresProvisioner, PostgresSpec } from '../types.js';
import { findPostgresInstalls, sortVersions, type PostgresInstall } from './binaries.js';
import { asRunUser, findSwitchUserTools, postgresCommand, SUPERUSER, type RunContext, type RunUser } from './commands.js';
import {
  createTemplates, datastoreLayout, dirAccess, linkSocketDir, privateDir, socketPathOf, unlinkSocketDir, writeServerFiles, type DatastoreLayout,
} from './local-files.js';
import { canLogIn, databaseExists, ident, quietSession, roleExists, upsertRole, withClient } from './sql.js';
import { clearForeignLockFile, findServer, logSince, logSize, portOf, stopServer, waitReady, type ServerProcess } from './server-process.js';

export interface LocalPostgresOptions {
  dataDir: string;
  /** The unprivileged user servers run as; required when Slipway runs as root (Postgres refuses root). */
  runAs?: RunUser;
  /** Searched before PATH and /usr/lib/postgresql/<major>/bin. */
  binDirs?: string[];
}

const HOST = '127.0.0.1';
/** Crash recovery replays WAL before a server accepts connections; give it time. */
const START_TIMEOUT_MS = 60_000;
/** Create picks a free port, but something else may bind it before the server does: try another. */
const PORT_ATTEMPTS = 3;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

class StartFailed extends Error {
  constructor(
    message: string,
    readonly portTaken: boolean,
  ) {
    super(message);
  }
}

/** What Placement.state holds for a local server: its postmaster. */
type LocalState = Partial<ServerProcess>;

/**
 * One real postgres server per datastore under <dataDir>/datastores/<id>/ (pgdata/, socket/, postgres.log), run
 * detached so it outlives Slipway, listening on 127.0.0.1 at a port fixed at create. Only the datastore's own user
 * may log in over TCP (SCRAM); Slipway administers it as a superuser over a private unix socket.
 */
export function createLocalPostgres(opts: LocalPostgresOptions): PostgresProvisioner {
  if (process.getuid?.() === 0 && !opts.runAs) throw new Error('Postgres refuses to run as root: give the local Postgres provisioner an unprivileged runAs user');
  if (opts.runAs && process.getuid?.() !== 0) throw new Error('runAs needs Slipway to run as root');
  const installs = findPostgresInstalls(opts.binDirs);
  mkdirSync(opts.dataDir, { recursive: true, mode: 0o700 });
  const dataDir = realpathSync(opts.dataDir);
  const ctx: RunContext = { dataDir, runAs: opts.runAs, tools: opts.runAs ? findSwitchUserTools() : undefined };
  const templates = createTemplates(ctx);
  const adminOsUser = os.userInfo().username;

  function installFor(version: string): PostgresInstall {
    const install = installs.get(version);
    if (install) return install;
    throw new Error(`PostgreSQL ${version} is not installed here (installed: ${sortVersions(installs.keys()).join(', ') || 'none'})`);
  }

  const layoutOf = (spec: PostgresSpec) => datastoreLayout(dataDir, spec.id);
  const placementOf = (port: number, server: ServerProcess): Placement => ({ host: HOST, port, state: { pid: server.pid, startTime: server.startTime } });
  const stateOf = (placement: Placement) => placement.state as LocalState;

  /** Starts the server detached; retried while backends of a killed postmaster still hold its shared memory. */
  async function launch(install: PostgresInstall, layout: DatastoreLayout): Promise<ServerProcess> {
    const deadline = Date.now() + START_TIMEOUT_MS;
    for (;;) {
      clearForeignLockFile(layout.pgdata);
      const logFrom = logSize(layout.log);
      const command = asRunUser(ctx, dirAccess(ctx, layout.pgdata, [layout.socketDir]), postgresCommand(install, layout.pgdata));
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
      throw new StartFailed(`postgres ${why}: ${log || '(no output)'}`, /could not bind|already in use/i.test(log));
    }
  }

  async function start(spec: PostgresSpec, placement: Placement): Promise<Placement> {
    const install = installFor(spec.version);
    const layout = layoutOf(spec);
    if (!existsSync(path.join(layout.pgdata, 'PG_VERSION'))) throw new Error(`the data of ${spec.id} is missing (${layout.pgdata})`);
    privateDir(ctx, layout.dir, false);
    privateDir(ctx, layout.socketDir, true);
    linkSocketDir(layout);
    writeServerFiles(ctx, spec, layout, placement.port, adminOsUser);
    const running = findServer(layout.pgdata, stateOf(placement));
    if (running) {
      // Adopted; it may still be starting up (recovering after a crash).
      const outcome = await waitReady(layout.pgdata, running, START_TIMEOUT_MS);
      if (!outcome.ready) throw new Error(`postgres (pid ${running.pid}) is running but not ready: ${logSince(layout.log, 0).split('\n').slice(-5).join('\n')}`);
      return placementOf(placement.port, running);
    }
    return placementOf(placement.port, await launch(install, layout));
  }

  /** The datastore's role and database, made over the socket; converges when re-run. */
  async function bootstrap(spec: PostgresSpec, placement: Placement): Promise<void> {
    await withClient({ host: socketPathOf(layoutOf(spec)), port: placement.port, user: SUPERUSER, database: 'postgres' }, async (client) => {
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
      if (!existsSync(layout.pgdata)) await templates.copyInto(install, layout);
      for (let attempt = 1; ; attempt++) {
        // A server left running by an interrupted create keeps its port.
        const port = (findServer(layout.pgdata, {}) && portOf(layout.pgdata)) || (await freePort());
        try {
          const placement = await start(spec, { host: HOST, port, state: {} });
          await bootstrap(spec, placement);
          return placement;
        } catch (err) {
          if (!(err instanceof StartFailed && err.portTaken) || attempt >= PORT_ATTEMPTS) throw err;
        }
      }
    },

    start,

    async stop(spec, placement) {
      const server = findServer(layoutOf(spec).pgdata, stateOf(placement));
      if (server) await stopServer(server, 'fast');
    },

    check(spec, placement) {
      rotateLogIfLarge(layoutOf(spec).log); // the check runs every few seconds: the log's size is kept here
      return canLogIn({ host: placement.host, port: placement.port, user: spec.databaseUser, password: spec.password, database: spec.databaseName });
    },

    /** Sizes live in postgresql.conf and take a restart (shared_buffers, max_connections); nothing changed, no restart. */
    async update(spec, placement) {
      const layout = layoutOf(spec);
      const server = findServer(layout.pgdata, stateOf(placement));
      const changed = writeServerFiles(ctx, spec, layout, placement.port, adminOsUser);
      if (server && !changed) return placementOf(placement.port, server);
      if (server) await stopServer(server, 'fast');
      return start(spec, placement);
    },

    async destroy(spec, placement) {
      const layout = layoutOf(spec);
      const server = findServer(layout.pgdata, stateOf(placement));
      if (server) await stopServer(server, 'immediate');
      rmSync(layout.dir, { recursive: true, force: true });
      unlinkSocketDir(layout);
    },
  };
}
