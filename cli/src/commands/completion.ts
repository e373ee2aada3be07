import type { Command } from 'commander';
import { CliError, EXIT } from '../errors.js';
import { print } from '../output.js';

/** Every command path with its subcommands and options, read from the program itself: completion never drifts. */
function tree(command: Command, prefix = ''): Array<{ path: string; words: string[] }> {
  const words = [...command.commands.map((c) => c.name()), ...command.options.map((o) => o.long ?? o.short ?? '')];
  const own = { path: prefix, words: words.filter(Boolean) };
  return [own, ...command.commands.flatMap((c) => tree(c, prefix ? `${prefix} ${c.name()}` : c.name()))];
}

function bash(program: Command): string {
  const cases = tree(program)
    .map(({ path, words }) => `    "${path}") words="${words.join(' ')}" ;;`)
    .join('\n');
  return `# slipway completion for bash: eval "$(slipway completion bash)" (or save it in /etc/bash_completion.d/slipway)
_slipway() {
  local cur=\${COMP_WORDS[COMP_CWORD]} path="" words="" i
  for ((i = 1; i < COMP_CWORD; i++)); do
    case "\${COMP_WORDS[i]}" in -*) ;; *) path="\${path:+$path }\${COMP_WORDS[i]}" ;; esac
  done
  while :; do
    case "$path" in
${cases}
    *) # a positional argument (a service's name): complete as its command
      if [ "$path" != "\${path% *}" ]; then path="\${path% *}"; continue; fi; words="" ;;
    esac
    break
  done
  COMPREPLY=($(compgen -W "$words" -- "$cur"))
}
complete -o default -F _slipway slipway
`;
}

function zsh(program: Command): string {
  return `#compdef slipway
# slipway completion for zsh: eval "$(slipway completion zsh)", or save it as _slipway in your $fpath
autoload -U bashcompinit && bashcompinit
${bash(program)}`;
}

export function completionCommand(program: Command): void {
  program
    .command('completion <shell>')
    .description('Print the shell completion script: bash or zsh')
    .action((shell: string) => {
      if (shell === 'bash') return print(bash(program));
      if (shell === 'zsh') return print(zsh(program));
      throw new CliError('the shell must be bash or zsh', EXIT.USAGE);
    });
}
