import type { Command } from 'commander';
import { ok, type Api } from '../api.js';
import { CliError, EXIT } from '../errors.js';
import { note, out, show, status, table } from '../output.js';
import { findService, session } from '../session.js';

type Deploy = Awaited<ReturnType<typeof getDeploy>>;

export async function getDeploy(api: Api, serviceId: string, deployId: string) {
  return ok(api.GET('/v1/services/{serviceId}/deploys/{deployId}', { params: { path: { serviceId, deployId } } }));
}

export async function listDeploys(api: Api, serviceId: string, limit = 20) {
  const list = await ok(
    api.GET('/v1/services/{serviceId}/deploys', { params: { path: { serviceId }, query: { limit } } }),
  );
  return list.map((item) => item.deploy);
}

const when = (iso: string | undefined) => (iso ? iso.replace('T', ' ').replace(/\.\d+Z$/, 'Z') : '');
const row = (d: Deploy) => [d.id, status(d.status), d.trigger, when(d.createdAt), when(d.finishedAt)];

export function deployCommands(program: Command): void {
  const deploys = program.command('deploys').description("List a service's deploys, cancel one, roll back");
  deploys
    .command('ls [service]')
    .description('List deploys, newest first')
    .option('--limit <n>', 'how many', '20')
    .option('--json', 'print JSON')
    .action(async (ref: string | undefined, options: { json?: boolean; limit: string }, command: Command) => {
      const current = session(command);
      const service = await findService(current, ref);
      const list = await listDeploys(current.api, service.id, Number(options.limit));
      show(options.json, list, () => table(['id', 'status', 'trigger', 'created', 'finished'], list.map(row)));
    });
  deploys
    .command('show <deployId> [service]')
    .description("Show a deploy, with its failure's reason")
    .option('--json', 'print JSON')
    .action(async (deployId: string, ref: string | undefined, options: { json?: boolean }, command: Command) => {
      const current = session(command);
      const service = await findService(current, ref);
      const deploy = await getDeploy(current.api, service.id, deployId);
      show(options.json, deploy, () =>
        [
          table(['id', 'status', 'trigger', 'created', 'finished'], [row(deploy)]),
          ...(deploy.failureReason ? [`\n${out.red('Failed:')} ${deploy.failureReason}`] : []),
        ].join('\n'),
      );
    });
  deploys
    .command('cancel <deployId> [service]')
    .description('Cancel a deploy that is still building or starting')
    .action(async (deployId: string, ref: string | undefined, _options, command: Command) => {
      const current = session(command);
      const service = await findService(current, ref);
      await ok(
        current.api.POST('/v1/services/{serviceId}/deploys/{deployId}/cancel', {
          params: { path: { serviceId: service.id, deployId } },
        }),
      );
      note(`${out.green('✓')} Canceled ${deployId}`);
    });
  deploys
    .command('rollback [service]')
    .description('Make an earlier deploy live again (default: the one live before the current one)')
    .option('--to <deployId>', 'the deploy to roll back to')
    .option('--json', 'print JSON')
    .action(async (ref: string | undefined, options: { to?: string; json?: boolean }, command: Command) => {
      const current = session(command);
      const service = await findService(current, ref);
      const target = options.to ?? (await previousLive(current.api, service.id));
      const deploy = await ok(
        current.api.POST('/v1/services/{serviceId}/rollback', {
          params: { path: { serviceId: service.id } },
          body: { deployId: target },
        }),
      );
      show(options.json, deploy, () => `${out.green('✓')} Rolling back to ${target}: deploy ${deploy.id}`);
    });
}

/** Heroku's `rollback` without an argument: the newest deploy that was live before the current one. */
async function previousLive(api: Api, serviceId: string): Promise<string> {
  const list = await listDeploys(api, serviceId, 100);
  const live = list.findIndex((d) => d.status === 'live');
  const earlier = list.slice(live + 1).find((d) => d.status === 'deactivated');
  if (live < 0 || !earlier)
    throw new CliError('no earlier deploy went live', EXIT.USAGE, 'name one with --to <deployId>');
  return earlier.id;
}
