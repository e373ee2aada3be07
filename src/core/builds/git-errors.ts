import type { RunResult } from '../../lib/exec.js';

export const DISK_FULL = 'the build disk is full';

/**
 * git's own words for a failure, each turned into a short reason of Slipway's. What the remote said (`remote: …`
 * lines, an error page's body) is never passed on: the repo may name a server the tenant does not own, and its
 * answer is not the tenant's to read. Order matters: the first that matches is the reason.
 */
const REASONS: Array<[RegExp, (m: RegExpMatchArray) => string]> = [
  [/No space left on device|Disk quota exceeded/i, () => DISK_FULL],
  [
    /Could not resolve host|Could not resolve hostname|Name or service not known|Temporary failure in name resolution/i,
    () => 'the host name could not be resolved',
  ],
  [
    /transport '([\w+.-]+)' not allowed|protocol '?([\w+.-]+)'? is not supported|Unable to find remote helper/i,
    (m) => `the ${m[1] ?? m[2] ?? "repo's"} transport is not allowed`,
  ],
  [
    /Failed to connect to|Connection refused|Couldn't connect to server|No route to host|Network is unreachable|unable to connect to/i,
    () =>
      'could not connect to the server (Slipway reaches only public addresses from builds: see SLIPWAY_EGRESS_ALLOW)',
  ],
  [/Connection timed out|Operation timed out|timed out after/i, () => 'the connection timed out'],
  [/SSL|certificate|TLS/i, () => 'the TLS connection failed (certificate or handshake)'],
  [
    /Authentication failed|could not read Username|could not read Password|Permission denied \(publickey|terminal prompts disabled|HTTP Basic: Access denied/i,
    () => 'authentication is required or was refused',
  ],
  [/Remote branch (\S+) not found|Could not find remote branch (\S+)/i, (m) => `branch ${m[1] ?? m[2]} not found`],
  [/returned error: (\d{3})|HTTP (\d{3})/i, (m) => `the server answered HTTP ${m[1] ?? m[2]}`],
  [
    /repository '.*' not found|Repository not found|does not appear to be a git repository|not a git repository|does not exist/i,
    () => 'repository not found (or no access to it)',
  ],
  [/dubious ownership|Permission denied/i, () => 'the repository cannot be read by the user builds run as'],
  [
    /remote end hung up|early EOF|unexpected disconnect|Connection reset|protocol error|bad line length|invalid packet/i,
    () => 'the server closed the connection or did not speak git',
  ],
  [
    /reference is not a tree|unable to read tree|did not match any file|not our ref|upload-pack: not our ref/i,
    () => 'no such commit in the repository',
  ],
];

/** Why a git command failed, in a few words of Slipway's (never the remote's). */
export function summarizeGitFailure(result: RunResult, limits: { stallMs: number }): string {
  if (result.canceled) return 'canceled';
  if (result.stalled) return `no data from the server for ${Math.round(limits.stallMs / 1000)} s: stopped`;
  if (result.timedOut) return 'it did not finish in time';
  // Only git's own lines: `remote:` lines, and whatever a server sent, are left out before matching. A progress
  // line ends in a carriage return, which the next message follows.
  const own = result.output
    .split(/[\r\n]/)
    .filter((line) => /^(fatal|error|warning):/.test(line.trim()))
    .join('\n');
  for (const [pattern, reason] of REASONS) {
    const m = own.match(pattern);
    if (m) return reason(m);
  }
  return `git exited with ${result.exitCode ?? result.signal}`;
}
