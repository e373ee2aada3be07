import { Command, CommanderError } from 'commander';
import { apiCommand } from './commands/api.js';
import { authCommands } from './commands/auth.js';
import { blueprintCommands } from './commands/blueprint.js';
import { completionCommand } from './commands/completion.js';
import { dbCommands } from './commands/db.js';
import { deployCommand } from './commands/deploy.js';
import { deployCommands } from './commands/deploys.js';
import { domainCommands } from './commands/domains.js';
import { envCommands } from './commands/env.js';
import { logsCommand } from './commands/logs.js';
import { openCommand } from './commands/open.js';
import { serviceCommands } from './commands/services.js';
import { CliError, EXIT } from './errors.js';
import { err } from './output.js';

const program = new Command('slipway')
  .description("Slipway's command-line client: deploy a directory, follow logs, manage services (docs/cli.md)")
  .version('0.1.0')
  .option('--context <name>', 'the saved context to use (default: the current one; see `slipway contexts ls`)')
  .showHelpAfterError('(add --help for usage)')
  .exitOverride();

authCommands(program);
deployCommand(program);
serviceCommands(program);
deployCommands(program);
logsCommand(program);
envCommands(program);
domainCommands(program);
dbCommands(program);
blueprintCommands(program);
openCommand(program);
apiCommand(program);
completionCommand(program);
// Every subcommand reports its usage errors through main's one handler, too.
for (const command of program.commands) {
  command.exitOverride();
  for (const sub of command.commands) sub.exitOverride();
}

try {
  await program.parseAsync(process.argv);
} catch (error) {
  if (error instanceof CommanderError) {
    // Help and --version are not failures; commander already printed the usage error itself.
    process.exitCode = error.exitCode === 0 ? EXIT.OK : EXIT.USAGE;
  } else if (error instanceof CliError) {
    process.stderr.write(`${err.red('Error:')} ${error.message}\n`);
    if (error.hint) process.stderr.write(`${err.dim('Hint:')} ${error.hint}\n`);
    process.exitCode = error.exitCode;
  } else {
    process.stderr.write(`${err.red('Error:')} ${(error as Error).stack ?? String(error)}\n`);
    process.exitCode = EXIT.ERROR;
  }
}
