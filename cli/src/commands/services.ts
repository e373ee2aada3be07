import type { Command } from 'commander';
import { ok } from '../api.js';
import { CliError, EXIT } from '../errors.js';
import { note, out, show, status, table } from '../output.js';
import { ask, interactive } from '../prompt.js';
import { findService, session, type Service } from '../session.js';

const TYPES = ['web_service', 'private_service', 'background_worker', 'cron_job', 'static_site'] as const;
const RUNTIMES = ['node', 'python', 'ruby', 'go', 'rust', 'elixir', 'docker', 'image'] as const;
type ServiceType = (typeof TYPES)[number];
type Runtime = (typeof RUNTIMES)[number];

export interface CreateOptions {
  type?: string;
  runtime?: string;
  plan?: string;
  buildCommand?: string;
  startCommand?: string;
  healthCheckPath?: string;
  publishPath?: string;
}

function oneOf<T extends string>(what: string, value: string, allowed: readonly T[]): T {
  if ((allowed as readonly string[]).includes(value)) return value as T;
  throw new CliError(`${what} must be one of ${allowed.join(', ')}`, EXIT.USAGE);
}

/** Asks, on a terminal, for what the flags left out; elsewhere the defaults (a Node web service on the free plan). */
export async function completeOptions(
  options: CreateOptions,
  guess: Partial<CreateOptions> = {},
): Promise<CreateOptions> {
  const merged = { ...guess, ...Object.fromEntries(Object.entries(options).filter(([, v]) => v !== undefined)) };
  const pick = async (key: 'type' | 'runtime' | 'plan', question: string, fallback: string) =>
    merged[key] ?? (interactive() ? await ask(question, fallback) : fallback);
  const type = await pick('type', `Type (${TYPES.join(', ')})`, 'web_service');
  const runtime =
    type === 'static_site' ? undefined : await pick('runtime', `Runtime (${RUNTIMES.join(', ')})`, 'node');
  const plan = type === 'static_site' ? undefined : await pick('plan', 'Plan', 'free');
  return { ...merged, type, runtime, plan };
}

export async function createService(
  api: ReturnType<typeof session>['api'],
  workspaceId: string | undefined,
  name: string,
  options: CreateOptions,
) {
  const type: ServiceType = oneOf('--type', options.type ?? 'web_service', TYPES);
  const runtime: Runtime | undefined = options.runtime ? oneOf('--runtime', options.runtime, RUNTIMES) : undefined;
  const created = await ok(
    api.POST('/v1/services', {
      body: {
        type,
        name,
        ownerId: workspaceId,
        serviceDetails: {
          runtime,
          plan: options.plan as never,
          healthCheckPath: options.healthCheckPath,
          publishPath: options.publishPath,
          buildCommand: type === 'static_site' ? options.buildCommand : undefined,
          envSpecificDetails:
            type === 'static_site'
              ? undefined
              : { buildCommand: options.buildCommand, startCommand: options.startCommand },
        },
      },
    }),
  );
  return created.service;
}

const row = (s: Service) => [
  s.name,
  s.id,
  s.type,
  String(s.serviceDetails.runtime ?? s.serviceDetails.env ?? ''),
  status(s.suspended === 'suspended' ? 'suspended' : 'active'),
  String(s.serviceDetails.url ?? ''),
];

export function serviceCommands(program: Command): void {
  const services = program.command('services').description('List and manage services');
  services
    .command('ls')
    .description("List the workspace's services")
    .option('--json', 'print JSON')
    .action(async (options: { json?: boolean }, command: Command) => {
      const { api, context } = session(command);
      const ownerId = context.workspaceId ? [context.workspaceId] : undefined;
      const list = (await ok(api.GET('/v1/services', { params: { query: { ownerId, limit: 100 } } }))).map(
        (i) => i.service,
      );
      show(options.json, list, () => table(['name', 'id', 'type', 'runtime', 'status', 'url'], list.map(row)));
    });
  services
    .command('show [service]')
    .description('Show a service (by name or id; default: the one this directory deploys)')
    .option('--json', 'print JSON')
    .action(async (ref: string | undefined, options: { json?: boolean }, command: Command) => {
      const service = await findService(session(command), ref);
      show(options.json, service, () => table(['name', 'id', 'type', 'runtime', 'status', 'url'], [row(service)]));
    });
  services
    .command('create <name>')
    .description('Create a service (asks for type, runtime and plan on a terminal, unless given)')
    .option('--type <type>', TYPES.join(' | '))
    .option('--runtime <runtime>', RUNTIMES.join(' | '))
    .option('--plan <plan>', 'free, starter, standard, …')
    .option('--build-command <command>')
    .option('--start-command <command>')
    .option('--health-check-path <path>')
    .option('--publish-path <path>', "a static site's output directory")
    .option('--json', 'print JSON')
    .action(async (name: string, options: CreateOptions & { json?: boolean }, command: Command) => {
      const { api, context } = session(command);
      const service = await createService(api, context.workspaceId, name, await completeOptions(options));
      show(options.json, service, () => `${out.green('✓')} Created ${service.name} (${service.id})`);
    });

  const lifecycle = (verb: 'suspend' | 'resume' | 'restart', description: string) =>
    services
      .command(`${verb} [service]`)
      .description(description)
      .action(async (ref: string | undefined, _options, command: Command) => {
        const current = session(command);
        const service = await findService(current, ref);
        const params = { params: { path: { serviceId: service.id } } };
        if (verb === 'suspend') await ok(current.api.POST('/v1/services/{serviceId}/suspend', params));
        if (verb === 'resume') await ok(current.api.POST('/v1/services/{serviceId}/resume', params));
        if (verb === 'restart') await ok(current.api.POST('/v1/services/{serviceId}/restart', params));
        note(`${out.green('✓')} ${verb}: ${service.name}`);
      });
  lifecycle('suspend', 'Suspend a service: its instances stop, its URL answers 503');
  lifecycle('resume', 'Resume a suspended service');
  lifecycle('restart', "Restart a service's instances on the live deploy, one at a time");

  services
    .command('delete <service>')
    .description('Delete a service, its deploys and its files')
    .option('-y, --yes', 'do not ask for confirmation')
    .action(async (ref: string, options: { yes?: boolean }, command: Command) => {
      const current = session(command);
      const service = await findService(current, ref);
      if (!options.yes) {
        if (!interactive()) throw new CliError('deleting needs --yes when nobody can confirm', EXIT.USAGE);
        if ((await ask(`Type the service's name to delete it`)) !== service.name)
          throw new CliError('not deleted', EXIT.USAGE);
      }
      await ok(current.api.DELETE('/v1/services/{serviceId}', { params: { path: { serviceId: service.id } } }));
      note(`${out.green('✓')} Deleted ${service.name}`);
    });
}
