import { existsSync, openAsBlob } from 'node:fs';
import path from 'node:path';
import type { Command } from 'commander';
import { ok, type Api } from '../api.js';
import { CliError, EXIT } from '../errors.js';
import { postForm } from '../form.js';
import type { paths } from '../../../openapi/schema.js';
import { note, out, print, show, status, table } from '../output.js';
import { packToBlob } from '../pack.js';
import { readLink, session, writeLink } from '../session.js';

type Validation = paths['/v1/blueprints/validate']['post']['responses'][200]['content']['application/json'];
type Created = paths['/v1/blueprints']['post']['responses'][201]['content']['application/json'];
type Sync = NonNullable<Created['sync']>;

/** `validate` prints each error as compilers do, `file:line:column: message`, so editors jump to it. */
function located(file: string, problem: { line?: number; column?: number; path?: string }, message: string): string {
  const where = problem.line ? `${file}:${problem.line}:${problem.column ?? 1}` : file;
  return `${where}: ${message}${problem.path ? out.dim(` (${problem.path})`) : ''}`;
}

async function waitForSync(api: Api, blueprintId: string, sync: Sync): Promise<Sync> {
  let current = sync;
  while (current.state === 'running') {
    await new Promise((resolve) => setTimeout(resolve, 1000));
    const syncs = await ok(
      api.GET('/v1/blueprints/{blueprintId}/syncs', { params: { path: { blueprintId }, query: { limit: 20 } } }),
    );
    const found = syncs.map((item) => item.sync).find((s) => s.id === sync.id);
    // Twenty newer syncs in a second: another client is syncing it; this one's outcome is in its list.
    if (!found)
      throw new CliError(
        `sync ${sync.id} is no longer among the latest`,
        EXIT.ERROR,
        `slipway api GET /v1/blueprints/${blueprintId}/syncs`,
      );
    current = found;
  }
  return current;
}

function report(json: boolean | undefined, sync: Sync): void {
  show(json, sync, () =>
    table(
      ['kind', 'name', 'action', 'deploy', 'error'],
      sync.resources.map((r) => [r.kind, r.name, status(r.action), r.deployId ?? '', r.error ?? '']),
    ),
  );
  if (sync.state !== 'success') throw new CliError(`the sync failed${sync.error ? `: ${sync.error}` : ''}`, EXIT.ERROR);
}

export function blueprintCommands(program: Command): void {
  const blueprint = program
    .command('blueprint')
    .description('render.yaml blueprints: validate, apply a directory, sync');
  blueprint
    .command('validate [file]')
    .description('Check a render.yaml against Slipway (errors at file:line:column), or show what it would create')
    .option('--json', 'print JSON')
    .action(async (file: string | undefined, options: { json?: boolean }, command: Command) => {
      const target = file ?? 'render.yaml';
      if (!existsSync(target)) throw new CliError(`${target} does not exist`, EXIT.USAGE);
      const { context } = session(command);
      const result = await postForm<Validation>(
        context,
        '/v1/blueprints/validate',
        { ownerId: context.workspaceId },
        { blob: await openAsBlob(target, { type: 'application/yaml' }), name: path.basename(target) },
      );
      if (options.json) print(JSON.stringify(result, null, 2));
      if (!result.valid) {
        if (!options.json) for (const e of result.errors ?? []) print(located(target, e, out.red(e.error)));
        throw new CliError(`${target} is not valid`, EXIT.USAGE);
      }
      if (options.json) return;
      const plan = result.plan!;
      print(
        `${out.green('✓')} ${target} is valid: ${plan.services.length} services, ${plan.databases.length} databases, ${plan.keyValue.length} key-value stores, ${plan.envGroups.length} env groups`,
      );
      for (const w of plan.warnings) print(located(target, w, out.yellow(`warning: ${w.warning}`)));
    });
  blueprint
    .command('apply [dir]')
    .description("Create or update the blueprint of a directory's render.yaml from its files, and sync it")
    .option('--name <name>', "the blueprint's name (default: the directory's)")
    .option('--json', 'print the sync as JSON')
    .action(async (dir: string | undefined, options: { name?: string; json?: boolean }, command: Command) => {
      const { api, context } = session(command);
      const root = path.resolve(dir ?? '.');
      const archive = { blob: await packToBlob(root), name: 'source.tgz' };
      let blueprintId = readLink(root, context, 'blueprint');
      let sync: Sync | undefined;
      if (blueprintId) {
        const uploaded = await postForm<{ sync?: Sync }>(context, `/v1/blueprints/${blueprintId}/upload`, {}, archive);
        sync = uploaded.sync;
      } else {
        const name = options.name ?? path.basename(root);
        const created = await postForm<Created>(
          context,
          '/v1/blueprints',
          { ownerId: context.workspaceId, name },
          archive,
        );
        blueprintId = created.blueprint.id;
        writeLink(root, context, blueprintId, 'blueprint');
        note(`${out.green('✓')} Created blueprint ${created.blueprint.name} (${blueprintId})`);
        sync = created.sync;
      }
      sync ??= await ok(api.POST('/v1/blueprints/{blueprintId}/sync', { params: { path: { blueprintId } }, body: {} }));
      note(`Syncing ${blueprintId}…`);
      report(options.json, await waitForSync(api, blueprintId, sync));
    });
  blueprint
    .command('sync [blueprint]')
    .description('Sync a blueprint again (default: the one this directory applies)')
    .option('--json', 'print the sync as JSON')
    .action(async (ref: string | undefined, options: { json?: boolean }, command: Command) => {
      const { api, context } = session(command);
      const blueprintId = ref ?? readLink(process.cwd(), context, 'blueprint');
      if (!blueprintId)
        throw new CliError('which blueprint?', EXIT.USAGE, 'give its id, or run this in an applied directory');
      const sync = await ok(
        api.POST('/v1/blueprints/{blueprintId}/sync', { params: { path: { blueprintId } }, body: {} }),
      );
      report(options.json, await waitForSync(api, blueprintId, sync));
    });
}
