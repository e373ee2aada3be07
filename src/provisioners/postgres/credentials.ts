import type pg from 'pg';
import { conflict, notFound } from '../../lib/errors.js';
import type { PostgresCredential, PostgresSpec } from '../types.js';
import { ident, literal, quietSession, roleExists } from './sql.js';

/**
 * Extra login roles of a datastore (Render's `/credentials`), the same SQL on a local server and on a cluster. Each
 * is a member of the datastore's own user (its database's owner) and acts as it (`SET role` at login), so every
 * credential reads and writes everything, and what one creates belongs to the owner and outlives the credential.
 * The comment tags a role as ours, with its creation time: `slipway:<id>:credential:<ISO time>`.
 */
const tagPrefix = (spec: PostgresSpec) => `slipway:${spec.id}:credential:`;

/** The plan's connection limit on the datastore's database, which every role but a superuser's counts against. */
export const databaseConnectionLimit = (spec: PostgresSpec) =>
  `ALTER DATABASE ${ident(spec.databaseName)} CONNECTION LIMIT ${Math.trunc(spec.size.maxConnections)}`;

/** The default user and the tagged members, with their open sessions. `client` is a superuser's. */
export async function listCredentials(client: pg.Client, spec: PostgresSpec): Promise<PostgresCredential[]> {
  const { rows } = await client.query<{ username: string; note: string | null; open: number }>(
    `select r.rolname as username, shobj_description(r.oid, 'pg_authid') as note,
            (select count(*) from pg_stat_activity a where a.usename = r.rolname)::int as open
       from pg_roles r
      where r.rolname = $1 or starts_with(coalesce(shobj_description(r.oid, 'pg_authid'), ''), $2)
      order by r.rolname = $1 desc, r.oid`,
    [spec.databaseUser, tagPrefix(spec)],
  );
  return rows.map((r) => ({
    username: r.username,
    default: r.username === spec.databaseUser,
    createdAt: r.note?.startsWith(tagPrefix(spec)) ? r.note.slice(tagPrefix(spec).length) : undefined,
    openConnections: r.open,
  }));
}

/** A new login role acting as the datastore's user; 409 when a role of that name exists (ours or not). */
export async function createCredential(
  client: pg.Client,
  spec: PostgresSpec,
  credential: { username: string; password: string },
): Promise<void> {
  await quietSession(client); // the password travels in the statement
  if (await roleExists(client, credential.username))
    throw conflict(`a role named "${credential.username}" already exists on the server`);
  const role = ident(credential.username);
  const owner = ident(spec.databaseUser);
  await client.query('begin');
  try {
    await client.query(`CREATE ROLE ${role} WITH LOGIN PASSWORD ${literal(credential.password)} IN ROLE ${owner}`);
    await client.query(`ALTER ROLE ${role} SET role = ${literal(spec.databaseUser)}`);
    await client.query(`COMMENT ON ROLE ${role} IS ${literal(tagPrefix(spec) + new Date().toISOString())}`);
    // The plan's connections bound the database, whichever role connects: a credential has no limit of its own, so
    // credentials never add connections (on a shared cluster, never take other tenants').
    await client.query(databaseConnectionLimit(spec));
    await client.query('commit');
  } catch (err) {
    await client.query('rollback').catch(() => undefined);
    throw err;
  }
}

/**
 * Drops one of our credentials: no new logins, its sessions ended, whatever it still owns in the datastore's
 * database handed to the datastore's user. `client` is a superuser's, connected to that database. 404 when the
 * role is not a credential of this datastore.
 */
export async function dropCredential(client: pg.Client, spec: PostgresSpec, username: string): Promise<void> {
  const { rows } = await client.query<{ note: string | null }>(
    `select shobj_description(oid, 'pg_authid') as note from pg_roles where rolname = $1`,
    [username],
  );
  if (!rows[0]?.note?.startsWith(tagPrefix(spec))) throw notFound('credential');
  const role = ident(username);
  await client.query(`ALTER ROLE ${role} NOLOGIN`);
  await client.query('select pg_terminate_backend(pid) from pg_stat_activity where usename = $1', [username]);
  await client.query(`REASSIGN OWNED BY ${role} TO ${ident(spec.databaseUser)}`);
  await client.query(`DROP OWNED BY ${role}`);
  await client.query(`DROP ROLE ${role}`);
}

/** The datastore's credentials by name (tagged ours). */
async function credentialNames(client: pg.Client, spec: PostgresSpec): Promise<string[]> {
  const { rows } = await client.query<{ name: string }>(
    `select rolname as name from pg_roles where starts_with(coalesce(shobj_description(oid, 'pg_authid'), ''), $1)`,
    [tagPrefix(spec)],
  );
  return rows.map((r) => r.name);
}

/** On a shared server, suspending a datastore takes its credentials' logins too (and resuming gives them back). */
export async function setCredentialsLogin(client: pg.Client, spec: PostgresSpec, login: boolean): Promise<void> {
  for (const name of await credentialNames(client, spec)) {
    await client.query(`ALTER ROLE ${ident(name)} ${login ? 'LOGIN' : 'NOLOGIN'}`);
    if (!login) await client.query('select pg_terminate_backend(pid) from pg_stat_activity where usename = $1', [name]);
  }
}

/** On a shared server, the credentials go with their datastore (after its database: they own nothing elsewhere). */
export async function dropAllCredentials(client: pg.Client, spec: PostgresSpec): Promise<void> {
  for (const name of await credentialNames(client, spec)) {
    await client.query('select pg_terminate_backend(pid) from pg_stat_activity where usename = $1', [name]);
    await client.query(`DROP ROLE IF EXISTS ${ident(name)}`);
  }
}
