import { readFileSync } from 'node:fs';
import { parseEnv } from 'node:util';
import type { Command } from 'commander';
import { ok } from '../api.js';
import { CliError, EXIT } from '../errors.js';
import { note, out, show, table } from '../output.js';
import { findService, type Service, session, type Session, withServiceOption } from '../session.js';

interface EnvOptions {
  service?: string;
  deploy?: boolean;
}

/** `KEY=value` arguments, split at the first '='. */
function assignments(pairs: string[]): Array<[string, string]> {
  return pairs.map((pair) => {
    const at = pair.indexOf('=');
    if (at <= 0) throw new CliError(`${pair}: expected KEY=value`, EXIT.USAGE);
    return [pair.slice(0, at), pair.slice(at + 1)];
  });
}

/** Env vars are read when an instance starts: --deploy starts a deploy of the latest source so they apply now. */
async function afterChange({ api }: Session, service: Service, options: EnvOptions) {
  if (!options.deploy) {
    note(out.dim(`Applies on the next deploy or restart of ${service.name} (or pass --deploy)`));
    return;
  }
  const deploy = await ok(
    api.POST('/v1/services/{serviceId}/deploys', { params: { path: { serviceId: service.id } }, body: {} }),
  );
  note(`Deploying ${service.name}: ${deploy.id} (follow it with: slipway deploys show ${deploy.id} ${service.name})`);
}

async function put(current: Session, service: Service, vars: Array<[string, string]>) {
  for (const [envVarKey, value] of vars) {
    await ok(
      current.api.PUT('/v1/services/{serviceId}/env-vars/{envVarKey}', {
        params: { path: { serviceId: service.id, envVarKey } },
        body: { value },
      }),
    );
  }
}

export function envCommands(program: Command): void {
  const env = program.command('env').description("A service's environment variables");
  withServiceOption(env.command('ls'))
    .description("List a service's env vars (values need the developer role)")
    .option('--json', 'print JSON')
    .action(async (options: EnvOptions & { json?: boolean }, command: Command) => {
      const current = session(command);
      const service = await findService(current, options.service);
      const vars = (
        await ok(current.api.GET('/v1/services/{serviceId}/env-vars', { params: { path: { serviceId: service.id } } }))
      ).map((item) => item.envVar);
      show(options.json, vars, () =>
        table(
          ['key', 'value'],
          vars.map((v) => [v.key, v.value]),
        ),
      );
    });
  withServiceOption(env.command('set <KEY=value...>'))
    .description('Add or change env vars')
    .option('--deploy', 'deploy afterwards, so running instances get them')
    .action(async (pairs: string[], options: EnvOptions, command: Command) => {
      const current = session(command);
      const service = await findService(current, options.service);
      const vars = assignments(pairs);
      await put(current, service, vars);
      note(`${out.green('✓')} Set ${vars.map(([key]) => key).join(', ')} on ${service.name}`);
      await afterChange(current, service, options);
    });
  withServiceOption(env.command('unset <KEY...>'))
    .description('Remove env vars')
    .option('--deploy', 'deploy afterwards, so running instances lose them')
    .action(async (keys: string[], options: EnvOptions, command: Command) => {
      const current = session(command);
      const service = await findService(current, options.service);
      for (const envVarKey of keys) {
        await ok(
          current.api.DELETE('/v1/services/{serviceId}/env-vars/{envVarKey}', {
            params: { path: { serviceId: service.id, envVarKey } },
          }),
        );
      }
      note(`${out.green('✓')} Removed ${keys.join(', ')} from ${service.name}`);
      await afterChange(current, service, options);
    });
  withServiceOption(env.command('import <file>'))
    .description('Add or change the env vars of a .env file (dotenv syntax: comments, quotes, export)')
    .option('--deploy', 'deploy afterwards, so running instances get them')
    .action(async (file: string, options: EnvOptions, command: Command) => {
      let text: string;
      try {
        text = readFileSync(file, 'utf8');
      } catch (error) {
        throw new CliError(`cannot read ${file}: ${(error as Error).message}`, EXIT.USAGE);
      }
      const vars = Object.entries(parseEnv(text)).map(([key, value]): [string, string] => [key, value ?? '']);
      if (vars.length === 0) throw new CliError(`${file} sets no variables`, EXIT.USAGE);
      const current = session(command);
      const service = await findService(current, options.service);
      await put(current, service, vars);
      note(`${out.green('✓')} Imported ${vars.length} variables into ${service.name}`);
      await afterChange(current, service, options);
    });
}
