import type pg from 'pg';
import { conflict } from '../../lib/errors.js';
import type { Placement, PostgresProvisioner, PostgresSpec } from '../types.js';
import {
  createCredential,
  databaseConnectionLimit,
  dropAllCredentials,
  dropCredential,
  listCredentials,
  setCredentialsLogin,
} from './credentials.js';
import { newestPgDump, pgDumpCommand, runDump } from './dump.js';
import { canLogIn, ident, literal, quietSession, serverMajor, upsertRole, withClient } from './sql.js';

export interface ClusterPostgresOptions {
  /** A superuser (or CREATEROLE + CREATEDB) connection string, SLIPWAY_POSTGRES_ADMIN_URL. */
  adminUrl: string;
}

/** Roles and databases Slipway made carry this comment; anything else of the same name is someone else's. */
const tagOf = (spec: PostgresSpec) => `slipway:${spec.id}`;

type Ownership = 'missing' | 'ours' | 'foreign';

/** Who owns the role and the database the spec names. */
async function ownership(client: pg.Client, spec: PostgresSpec): Promise<{ role: Ownership; database: Ownership }> {
  const tag = tagOf(spec);
  const role = await client.query<{ tag: string | null }>(
    `select shobj_description(oid, 'pg_authid') as tag from pg_roles where rolname = $1`,
    [spec.databaseUser],
  );
  const database = await client.query<{ tag: string | null; owner_tag: string | null }>(
    `select shobj_description(d.oid, 'pg_database') as tag, shobj_description(d.datdba, 'pg_authid') as owner_tag
       from pg_database d where d.datname = $1`,
    [spec.databaseName],
  );
  const roleRow = role.rows[0];
  const dbRow = database.rows[0];
  return {
    role: !roleRow ? 'missing' : roleRow.tag === tag ? 'ours' : 'foreign',
    // Untagged but owned by our role: a create cut short between CREATE DATABASE and COMMENT (they cannot share a transaction).
    database: !dbRow
      ? 'missing'
      : dbRow.tag === tag || (dbRow.tag === null && dbRow.owner_tag === tag)
        ? 'ours'
        : 'foreign',
  };
}

/**
 * A role and a database per datastore on an existing Postgres server (the one at adminUrl). The database is its
 * role's, and only that role may connect to it; stopping takes the role's LOGIN away.
 */
export function createClusterPostgres(opts: ClusterPostgresOptions): PostgresProvisioner {
  const adminUrl = new URL(opts.adminUrl);
  const host = adminUrl.hostname.replace(/^\[(.*)\]$/, '$1') || '127.0.0.1';
  const port = Number(adminUrl.port || 5432);
  const placement: Placement = { host, port, state: {} };

  /** The admin URL, in another database (the datastore's) when given. */
  const adminUrlIn = (database?: string) => {
    const url = new URL(opts.adminUrl);
    if (database) url.pathname = `/${encodeURIComponent(database)}`;
    return url;
  };
  const admin = <T>(fn: (client: pg.Client) => Promise<T>, database?: string) =>
    withClient({ connectionString: adminUrlIn(database).toString() }, async (client) => {
      await quietSession(client);
      return fn(client);
    });

  // versions() is synchronous: the server's version is asked for at once, and again while it is not known.
  const REASK_MS = 5000;
  let major: string | undefined;
  let asking: Promise<string> | undefined;
  let lastAsked = Date.now();
  function serverVersion(): Promise<string> {
    asking ??= admin(serverMajor).then(
      (version) => (major = version),
      (err: unknown) => {
        asking = undefined;
        throw err;
      },
    );
    return asking;
  }
  serverVersion().catch(() => undefined);

  /** The login of the datastore's own user (with the admin URL's other settings, e.g. sslmode). */
  function userConfig(spec: PostgresSpec): pg.ClientConfig {
    const url = new URL(opts.adminUrl);
    url.username = encodeURIComponent(spec.databaseUser);
    url.password = encodeURIComponent(spec.password);
    url.pathname = `/${encodeURIComponent(spec.databaseName)}`;
    return { connectionString: url.toString() };
  }

  async function requireOurRole(client: pg.Client, spec: PostgresSpec): Promise<void> {
    if ((await ownership(client, spec)).role !== 'ours')
      throw new Error(`the role "${spec.databaseUser}" of ${spec.id} is missing on ${host}:${port}`);
  }

  const terminateSessions = (client: pg.Client, spec: PostgresSpec) =>
    client.query(
      'select pg_terminate_backend(pid) from pg_stat_activity where usename = $1 and pid <> pg_backend_pid()',
      [spec.databaseUser],
    );

  return {
    kind: 'cluster',
    versions: () => {
      // Asked again at most every few seconds: GET /status is public and calls this on every request.
      if (!major && Date.now() - lastAsked > REASK_MS) {
        lastAsked = Date.now();
        serverVersion().catch(() => undefined);
      }
      return major ? [major] : [];
    },

    async create(spec) {
      const version = await serverVersion();
      if (spec.version !== version)
        throw new Error(`the Postgres server at ${host}:${port} runs version ${version}, not ${spec.version}`);
      await admin(async (client) => {
        const found = await ownership(client, spec);
        if (found.role === 'foreign')
          throw conflict(`a role named "${spec.databaseUser}" already exists on the Postgres server`);
        if (found.database === 'foreign')
          throw conflict(`a database named "${spec.databaseName}" already exists on the Postgres server`);
        const user = ident(spec.databaseUser);
        const db = ident(spec.databaseName);
        // Role and tag together, so an untagged role of this name is never ours.
        await client.query('begin');
        await upsertRole(
          client,
          { name: spec.databaseUser, password: spec.password, connectionLimit: spec.size.maxConnections, login: true },
          found.role === 'ours',
        );
        await client.query(`COMMENT ON ROLE ${user} IS ${literal(tagOf(spec))}`);
        await client.query('commit');
        if (found.database === 'missing') await client.query(`CREATE DATABASE ${db} OWNER ${user}`);
        await client.query(`COMMENT ON DATABASE ${db} IS ${literal(tagOf(spec))}`);
        await client.query(`REVOKE CONNECT, TEMPORARY ON DATABASE ${db} FROM PUBLIC`);
        await client.query(`GRANT CONNECT, TEMPORARY ON DATABASE ${db} TO ${user}`);
        await client.query(databaseConnectionLimit(spec));
      });
      return placement;
    },

    async start(spec) {
      await admin(async (client) => {
        await requireOurRole(client, spec);
        await client.query(`ALTER ROLE ${ident(spec.databaseUser)} LOGIN`);
        await setCredentialsLogin(client, spec, true);
      });
      return placement;
    },

    /** Suspended: no new logins, and the open sessions are ended. */
    async stop(spec) {
      await admin(async (client) => {
        if ((await ownership(client, spec)).role !== 'ours') return;
        await client.query(`ALTER ROLE ${ident(spec.databaseUser)} NOLOGIN`);
        await terminateSessions(client, spec);
        await setCredentialsLogin(client, spec, false);
      });
    },

    check: (spec) => canLogIn(userConfig(spec)),

    async update(spec) {
      await admin(async (client) => {
        await requireOurRole(client, spec);
        await client.query(
          `ALTER ROLE ${ident(spec.databaseUser)} CONNECTION LIMIT ${Math.trunc(spec.size.maxConnections)}`,
        );
        await client.query(databaseConnectionLimit(spec));
      });
      return placement;
    },

    listCredentials: (spec) => admin((client) => listCredentials(client, spec)),
    createCredential: (spec, _placement, credential) => admin((client) => createCredential(client, spec, credential)),
    dropCredential: (spec, _placement, username) =>
      admin((client) => dropCredential(client, spec, username), spec.databaseName),

    /** pg_dump as the admin URL's user, its password in pg_dump's environment, never on its command line. */
    dump(spec, _placement, file) {
      const url = adminUrlIn(spec.databaseName);
      const password = decodeURIComponent(url.password);
      url.password = '';
      return runDump(pgDumpCommand(newestPgDump(), { dbname: url.toString(), password }, file));
    },

    /** Drops only what is ours: a conflicting role or database of the same name (someone else's) stays. */
    async destroy(spec) {
      await admin(async (client) => {
        const found = await ownership(client, spec);
        if (found.database === 'ours')
          await client.query(`DROP DATABASE IF EXISTS ${ident(spec.databaseName)} WITH (FORCE)`);
        await dropAllCredentials(client, spec);
        if (found.role === 'ours') {
          await terminateSessions(client, spec);
          await client.query(`DROP ROLE IF EXISTS ${ident(spec.databaseUser)}`);
        }
      });
    },
  };
}
