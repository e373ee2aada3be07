import path from 'node:path';
import type { Command } from 'commander';
import { ok } from '../api.js';
import { CliError, EXIT } from '../errors.js';
import { guessService } from '../guess.js';
import { followLogs, label } from '../logs.js';
import { err, note, out, print, printJson } from '../output.js';
import { packDirectory } from '../pack.js';
import {
  findService,
  findServiceByName,
  readLink,
  session,
  writeLink,
  DONE,
  type Service,
  type Session,
} from '../session.js';
import { humanBytes, uploadSource } from '../upload.js';
import { getDeploy } from './deploys.js';
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
    if (found.data) return found.data; // a deleted service's link is forgotten: the deploy creates it again
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

const POLL_MS = 100;

/** Polls the deploy until it is done, streaming its build output to stderr meanwhile. */
async function watch(current: Session, service: Service, deployId: string) {
  const { api, context } = current;
  const started = await getDeploy(api, service.id, deployId);
  const query = new URLSearchParams({ resource: service.id, type: 'build', startTime: started.createdAt });
  const stop = new AbortController();
  let lastLine = Date.now();
  const streaming = followLogs(
    context,
    query,
    (entry) => {
      if (label(entry, 'deploy') !== deployId) return;
      lastLine = Date.now();
      process.stderr.write(`${err.dim('│')} ${entry.message}\n`);
    },
    stop.signal,
  ).catch((error: unknown) => note(err.yellow(`(build output unavailable: ${(error as Error).message})`)));
  let deploy = started;
  while (!DONE.has(deploy.status)) {
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
    deploy = await getDeploy(api, service.id, deployId);
  }
  // The build's lines were written before its status changed: the stream delivers the last of them within moments.
  const deadline = Date.now() + 1000;
  while (Date.now() - lastLine < POLL_MS && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
  stop.abort();
  await streaming;
  return deploy;
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
      const service = await serviceFor(current, root, options);
      writeLink(root, current.context, service.id);
      const pack = packDirectory(root);
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
      const deploy = await watch(current, service, deployId);
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
