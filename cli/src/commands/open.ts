import type { Command } from 'commander';
import { CliError, EXIT } from '../errors.js';
import { note, print } from '../output.js';
import { findService, session } from '../session.js';

export function openCommand(program: Command): void {
  program
    .command('open [service]')
    .description("Open a service's URL (or, with --dashboard, its dashboard page) in the browser")
    .option('--dashboard', 'its dashboard page instead')
    .option('--print', 'print the URL instead of opening it (the default when stdout is not a terminal)')
    .action(async (ref: string | undefined, options: { dashboard?: boolean; print?: boolean }, command: Command) => {
      const service = await findService(session(command), ref);
      const url = options.dashboard ? service.dashboardUrl : String(service.serviceDetails.url ?? '');
      if (!url) throw new CliError(`${service.name} has no public URL`, EXIT.USAGE, 'try --dashboard');
      if (options.print || !process.stdout.isTTY) return print(url);
      note(`Opening ${url}`);
      // xdg-open, open or start; where none works (a server over SSH), the URL is there to copy.
      const { default: open } = await import('open');
      await open(url).catch(() => print(url));
    });
}
