import pg from 'pg';

/** Names are validated upstream ([a-z_][a-z0-9_]*), and still always quoted. */
export const ident = (name: string): string => pg.escapeIdentifier(name);
export const literal = (value: string): string => pg.escapeLiteral(value);

/** How long a login (and each query) may take before a server counts as not answering. */
export const CONNECT_TIMEOUT_MS = 3000;

/** Runs `fn` on a fresh connection and always closes it. */
export async function withClient<T>(config: pg.ClientConfig, fn: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionTimeoutMillis: CONNECT_TIMEOUT_MS, query_timeout: 30_000, ...config });
  client.on('error', () => undefined); // a server going away mid-session surfaces as the failed query instead
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end().catch(() => undefined);
  }
}

/** Logs in with these credentials and runs `select 1`; false on any failure. */
export async function canLogIn(config: pg.ClientConfig): Promise<boolean> {
  try {
    return await withClient(
      { ...config, query_timeout: CONNECT_TIMEOUT_MS },
      async (client) => (await client.query('select 1 as ok')).rows[0]?.ok === 1,
    );
  } catch {
    return false;
  }
}

/**
 * Role passwords travel in CREATE/ALTER ROLE statements (so the server hashes them with its password_encryption):
 * keep this session's statements out of the server log, as far as the session's rights allow (superusers only).
 */
export async function quietSession(client: pg.Client): Promise<void> {
  await client.query(`select case when current_setting('is_superuser') = 'on' then
    set_config('log_statement', 'none', false) || set_config('log_min_error_statement', 'panic', false)
    || set_config('log_min_duration_statement', '-1', false) end`);
}

export interface RoleOptions {
  name: string;
  password: string;
  /** -1 = no limit. */
  connectionLimit: number;
  login: boolean;
}

/** CREATE ROLE when missing, else ALTER ROLE to the same settings, so a re-run converges. */
export async function upsertRole(client: pg.Client, role: RoleOptions, exists: boolean): Promise<void> {
  const options = `${role.login ? 'LOGIN' : 'NOLOGIN'} CONNECTION LIMIT ${Math.trunc(role.connectionLimit)} PASSWORD ${literal(role.password)}`;
  await client.query(`${exists ? 'ALTER' : 'CREATE'} ROLE ${ident(role.name)} WITH ${options}`);
}

export async function roleExists(client: pg.Client, name: string): Promise<boolean> {
  return ((await client.query('select 1 from pg_roles where rolname = $1', [name])).rowCount ?? 0) > 0;
}

export async function databaseExists(client: pg.Client, name: string): Promise<boolean> {
  return ((await client.query('select 1 from pg_database where datname = $1', [name])).rowCount ?? 0) > 0;
}

/** The server's major version: '15' (or '9.6' before 10). */
export async function serverMajor(client: pg.Client): Promise<string> {
  const num = Number(
    (await client.query<{ v: string }>(`select current_setting('server_version_num') as v`)).rows[0]?.v,
  );
  return num >= 100000 ? String(Math.floor(num / 10000)) : `${Math.floor(num / 10000)}.${Math.floor(num / 100) % 100}`;
}
