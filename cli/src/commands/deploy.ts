import path from 'node:path';
import type { Command } from 'commander';
import { apiError, ok } from '../api.js';
import { CliError, EXIT } from '../errors.js';
import { guessService } from '../guess.js';
import { note, out, print, printJson } from '../output.js';
import { packDirectory } from '../pack.js';
import {
  findService,
  findServiceByName,
  readLink,
  session,
  writeLink,
  type Service,
  type Session,
} from '../session.js';
import { humanBytes, uploadSource } from '../upload.js';
import { watchDeploy } from '../watch.js';
import { completeOptions, createService, type CreateOptions } from './services.js';

interface DeployOptions extends CreateOptions {
  service?: string;
  name?: string;
  json?: boolean;
}

/** The directory's service: --service, else the one it is linked to, else one named after it, else a new one. */
async function serviceFor(current: Session, root: string, options: DeployOptions): Promise<Service> {
  if (options.service) return findService(current, options.service);
  const linked = readLink(root, current.context);
  if (linked) {
    const found = await current.api.GET('/v1/services/{serviceId}', { params: { path: { serviceId: linked } } });
    if (found.data) return found.data;
    // A deleted service's link is forgotten (the deploy creates it again); any other answer is no reason to.
    if (found.response.status !== 404) throw apiError(found.response.status, found.error);
  }
  const name =
    options.name ??
    path
      .basename(root)
      .toLowerCase()
      .replace(/[^a-z0-9-]+/g, '-');
  const existing = await findServiceByName(current, name);
  if (existing) return existing;
  const details = await completeOptions(options, await guessService(root, name));
  const service = await createService(current.api, current.context.workspaceId, name, details);
  note(`${out.green('✓')} Created ${details.type} ${service.name} (${service.id})`);
  return service;
}

export function deployCommand(program: Command): void {
  program
    .command('deploy [dir]')
    .description(
      'Deploy a directory: pack it (minus .gitignore and .slipwayignore), upload it, create the service the first time, stream the build, print the URL',
    )
    .option('--service <service>', 'deploy to this service (name or id)')
    .option('--name <name>', "the new service's name (default: the directory's)")
    .option(
      '--type <type>',
      'for a new service: web_service, private_service, background_worker, cron_job, static_site',
    )
    .option('--runtime <runtime>', 'for a new service: node, python, ruby, go, rust, elixir, docker')
    .option('--plan <plan>', 'for a new service: free, starter, standard, …')
    .option('--build-command <command>', 'for a new service')
    .option('--start-command <command>', 'for a new service')
    .option('--health-check-path <path>', 'for a new web service')
    .option('--publish-path <path>', 'for a new static site: its output directory')
    .option('--json', 'print the service and the deploy as JSON')
    .action(async (dir: string | undefined, options: DeployOptions, command: Command) => {
      const current = session(command);
      const root = path.resolve(dir ?? '.');
      const pack = packDirectory(root); // a missing or empty directory fails here, before any service is made
      const service = await serviceFor(current, root, options);
      writeLink(root, current.context, service.id);
      note(`Uploading ${pack.files} files (${humanBytes(pack.bytes)})`);
      const upload = await uploadSource(current.context, service.id, pack);
      const deployId =
        upload.deployId ??
        (
          await ok(
            current.api.POST('/v1/services/{serviceId}/deploys', {
              params: { path: { serviceId: service.id } },
              body: {},
            }),
          )
        ).id;
      note(`Deploying ${service.name}: ${deployId}`);
      const deploy = await watchDeploy(current, service, deployId);
      const url = String(service.serviceDetails.url ?? '');
      if (options.json) printJson({ service, deploy, url });
      if (deploy.status !== 'live') {
        throw new CliError(
          `deploy ${deploy.id} ${deploy.status}${deploy.failureReason ? `: ${deploy.failureReason}` : ''}`,
          EXIT.DEPLOY_FAILED,
          `slipway logs ${service.name} --type build`,
        );
      }
      note(`${out.green('✓')} Live`);
      if (!options.json) print(url || service.id);
    });
}
