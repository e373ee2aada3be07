import { spawn } from 'node:child_process';
import type { Command } from 'commander';
import { ok, type Api } from '../api.js';
import { CliError, EXIT } from '../errors.js';
import { note, out, show, status, table } from '../output.js';
import { session, type Session } from '../session.js';

const KINDS = ['postgres', 'key-value'] as const;
type Kind = (typeof KINDS)[number];

interface Datastore {
  kind: Kind;
  id: string;
  name: string;
  plan: string;
  status: string;
}

async function listDatastores({ api, context }: Session): Promise<Datastore[]> {
  const ownerId = context.workspaceId ? [context.workspaceId] : undefined;
  const query = { params: { query: { ownerId, limit: 100 } } };
  const postgres = await ok(api.GET('/v1/postgres', query));
  const keyValue = await ok(api.GET('/v1/key-value', query));
  return [
    ...postgres.map(({ postgres: p }) => ({
      kind: 'postgres' as const,
      id: p.id,
      name: p.name,
      plan: p.plan,
      status: p.status,
    })),
    ...keyValue.map(({ keyValue: k }) => ({
      kind: 'key-value' as const,
      id: k.id,
      name: k.name,
      plan: k.plan,
      status: k.status,
    })),
  ];
}

/** A datastore by id (dpg-…, red-…) or name. */
async function findDatastore(current: Session, ref: string): Promise<Datastore> {
  const found = (await listDatastores(current)).find((d) => d.id === ref || d.name === ref);
  if (!found) throw new CliError(`no datastore named ${ref}`, EXIT.NOT_FOUND, 'see `slipway db ls`');
  return found;
}

/**
 * The client's environment from a connection string: the password goes in PGPASSWORD or REDISCLI_AUTH, never on the
 * command line (which every user of the machine can read in /proc) nor on the screen.
 */
export function clientCommand(
  kind: Kind,
  connectionString: string,
): { program: string; args: string[]; env: Record<string, string> } {
  const url = new URL(connectionString);
  const user = decodeURIComponent(url.username);
  const password = decodeURIComponent(url.password);
  if (kind === 'postgres') {
    return {
      program: 'psql',
      args: [],
      env: {
        PGHOST: url.hostname,
        PGPORT: url.port || '5432',
        PGUSER: user,
        PGPASSWORD: password,
        PGDATABASE: decodeURIComponent(url.pathname.slice(1)),
      },
    };
  }
  const args = ['-h', url.hostname, '-p', url.port || '6379', ...(user && user !== 'default' ? ['--user', user] : [])];
  if (url.protocol === 'rediss:') args.push('--tls');
  return { program: 'redis-cli', args, env: password ? { REDISCLI_AUTH: password } : {} };
}

async function connectionString(api: Api, store: Datastore): Promise<string> {
  const info =
    store.kind === 'postgres'
      ? await ok(api.GET('/v1/postgres/{postgresId}/connection-info', { params: { path: { postgresId: store.id } } }))
      : await ok(api.GET('/v1/key-value/{keyValueId}/connection-info', { params: { path: { keyValueId: store.id } } }));
  if (!info.externalConnectionString) {
    throw new CliError(
      `${store.name} takes no connections from outside its workspace`,
      EXIT.ERROR,
      'see docs/datastores.md',
    );
  }
  return info.externalConnectionString;
}

export function dbCommands(program: Command): void {
  const db = program.command('db').description('Postgres and key-value datastores');
  db.command('ls')
    .description("List the workspace's datastores")
    .option('--json', 'print JSON')
    .action(async (options: { json?: boolean }, command: Command) => {
      const list = await listDatastores(session(command));
      show(options.json, list, () =>
        table(
          ['name', 'id', 'kind', 'plan', 'status'],
          list.map((d) => [d.name, d.id, d.kind, d.plan, status(d.status)]),
        ),
      );
    });
  db.command('create <kind> <name>')
    .description(`Create a datastore: ${KINDS.join(' or ')}`)
    .option('--plan <plan>', 'free, starter, standard, …', 'free')
    .option('--pg-version <version>', 'Postgres major version (default: the newest)')
    .option('--json', 'print JSON')
    .action(
      async (
        kind: string,
        name: string,
        options: { plan: string; pgVersion?: string; json?: boolean },
        command: Command,
      ) => {
        if (!(KINDS as readonly string[]).includes(kind))
          throw new CliError(`kind must be one of ${KINDS.join(', ')}`, EXIT.USAGE);
        const { api, context } = session(command);
        const ownerId = context.workspaceId;
        const created =
          kind === 'postgres'
            ? await ok(
                api.POST('/v1/postgres', {
                  body: { name, ownerId, plan: options.plan as never, version: options.pgVersion as never },
                }),
              )
            : await ok(api.POST('/v1/key-value', { body: { name, ownerId, plan: options.plan as never } }));
        show(
          options.json,
          created,
          () =>
            `${out.green('✓')} Created ${kind} ${created.name} (${created.id}); connect with: slipway db connect ${created.name}`,
        );
      },
    );
  db.command('connect <datastore>')
    .description('Open psql or redis-cli on a datastore, with its credentials (never printed)')
    .action(async (ref: string, _options, command: Command) => {
      const current = session(command);
      const store = await findDatastore(current, ref);
      const client = clientCommand(store.kind, await connectionString(current.api, store));
      note(out.dim(`Connecting to ${store.name} with ${client.program}…`));
      // Ctrl-C is psql's (it cancels the query): this process waits for it to end rather than leave it orphaned.
      const ignore = () => undefined;
      process.on('SIGINT', ignore);
      const child = spawn(client.program, client.args, { stdio: 'inherit', env: { ...process.env, ...client.env } });
      child.on('close', () => process.off('SIGINT', ignore));
      const code = await new Promise<number>((resolve, reject) => {
        child.on('error', (error: NodeJS.ErrnoException) =>
          reject(
            error.code === 'ENOENT'
              ? new CliError(
                  `${client.program} is not installed`,
                  EXIT.USAGE,
                  `install it (apt-get install ${client.program === 'psql' ? 'postgresql-client' : 'redis-tools'})`,
                )
              : error,
          ),
        );
        child.on('close', (exit) => resolve(exit ?? 1));
      });
      process.exitCode = code;
    });
}
