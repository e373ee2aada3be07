/**
 * What a failed build's or start's own output says went wrong, in words a newcomer can act on (docs/deploys.md,
 * "Failure reasons"). Looked for in the output's last HINT_SCAN_CHARS only, so each pattern runs on a bounded text.
 */
export const HINT_SCAN_CHARS = 4000;
type When = 'build' | 'run';
const HINTS: { pattern: RegExp; hint(match: RegExpMatchArray, when: When): string }[] = [
  {
    // Node, CommonJS ("Cannot find module 'express'") and ES modules ("Cannot find package 'express' imported from …").
    pattern: /Cannot find (?:module|package) '([^'\n]{1,200})'/,
    hint: ([, name]) =>
      name!.startsWith('.') || name!.startsWith('/')
        ? `the file ${JSON.stringify(name)} is missing from the deploy: check the build command produced it, and the paths (rootDir, startCommand) it is looked for from`
        : `the module ${JSON.stringify(name)} is not installed: add it to package.json's "dependencies" (the build command installs them)`,
  },
  {
    pattern: /ModuleNotFoundError: No module named '([^'\n]{1,200})'/,
    hint: ([, name]) =>
      `the Python module ${JSON.stringify(name)} is not installed: add its package to requirements.txt (the build command installs it)`,
  },
  {
    pattern: /([^\s:'"]{1,100}): (?:\d+: )?(?:command )?not found/,
    hint: ([, name]) => `command not found: "${name}" is not installed or not on the PATH`,
  },
  {
    // dash ("can't cd to x") and bash ("cd: x: No such file or directory").
    pattern: /cd: (?:can't cd to ([^\s'"]{1,200})|([^\s:'"]{1,200}): No such file or directory)/,
    hint: (m) =>
      `the directory "${m[1] ?? m[2]}" is not in the deploy: commands run from the service's rootDir, in what the build left there`,
  },
  {
    pattern: /EADDRINUSE[^\n]{0,80}?(\d{2,5})|address already in use[^\n]{0,80}?(\d{2,5})/i,
    hint: (m) => `port ${m[1] ?? m[2]} is already taken in the instance: two servers of the app listen on it`,
  },
  {
    pattern: /EROFS|Read-only file system|EACCES|Permission denied/,
    hint: (_, when) =>
      when === 'run'
        ? "the app was refused a file: a deploy's files are read-only while it runs; write to /tmp or $HOME (emptied at every start), or to a datastore"
        : 'the build was refused a file: a script it runs must be executable (chmod +x, or run it as `sh script.sh`), and it writes only in its source dir, $HOME and /tmp',
  },
];

/** The first hint the output's tail gives, if any; `when` it was printed decides what a refused file means. */
export function outputHint(tail: string, when: When): string | undefined {
  for (const { pattern, hint } of HINTS) {
    const match = tail.match(pattern);
    if (match) return hint(match, when);
  }
  return undefined;
}
