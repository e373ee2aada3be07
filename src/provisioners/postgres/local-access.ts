import path from 'node:path';
import type pg from 'pg';
import type { Placement, PostgresAccess, PostgresSpec } from '../types.js';
import { SUPERUSER } from './commands.js';
import { createCredential, dropCredential, listCredentials } from './credentials.js';
import { pgDumpCommand, runDump } from './dump.js';

type AsAdmin = <T>(
  spec: PostgresSpec,
  port: number,
  fn: (client: pg.Client) => Promise<T>,
  config?: pg.ClientConfig,
) => Promise<T>;

/**
 * Credentials and exports of a local server, all over its private unix socket as the superuser (peer authentication,
 * as every administration of it): nothing runs on the host's network, whatever namespace the server listens in.
 */
export function localPostgresAccess(deps: {
  asAdmin: AsAdmin;
  socketDir: (spec: PostgresSpec) => string;
  /** The `postgres` program of the datastore's version: pg_dump is beside it. */
  postgresBin: (spec: PostgresSpec) => string;
}): PostgresAccess {
  const inDatabase = (spec: PostgresSpec) => ({ database: spec.databaseName });
  return {
    listCredentials: (spec, placement) => deps.asAdmin(spec, placement.port, (c) => listCredentials(c, spec)),
    createCredential: (spec, placement, credential) =>
      deps.asAdmin(spec, placement.port, async (client) => {
        await createCredential(client, spec, credential);
        // A server adopted after an upgrade may still run with a pg_hba.conf that admitted no members: reread it.
        await client.query('select pg_reload_conf()');
      }),
    dropCredential: (spec, placement, username) =>
      deps.asAdmin(spec, placement.port, (client) => dropCredential(client, spec, username), inDatabase(spec)),
    dump: (spec: PostgresSpec, placement: Placement, file: string) =>
      runDump(
        pgDumpCommand(
          path.join(path.dirname(deps.postgresBin(spec)), 'pg_dump'),
          // The socket dir as pg_dump's cwd, named through /proc/self/cwd: short whatever the data dir's depth.
          {
            dbname: spec.databaseName,
            host: '/proc/self/cwd',
            port: placement.port,
            user: SUPERUSER,
            cwd: deps.socketDir(spec),
          },
          file,
        ),
      ),
  };
}
