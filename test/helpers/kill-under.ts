import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';

/**
 * SIGKILLs whatever still runs from a data dir (its cwd or command line lies inside it): a datastore
 * server a step was creating while the test ended, an app the store lost track of.
 */
export function killProcessesUnder(dataDir: string) {
  const inside = `${dataDir}/`;
  const found: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue;
    try {
      const cwd = readlinkSync(`/proc/${entry}/cwd`);
      if (
        `${cwd}/`.startsWith(inside) ||
        readFileSync(`/proc/${entry}/cmdline`, 'utf8').includes(inside) ||
        holdsFileUnder(entry, inside)
      )
        found.push(Number(entry));
    } catch {
      // gone, or not ours to read
    }
  }
  for (const pid of found) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
}

/**
 * Whether process `pid` has a file under `inside` open: nginx's workers do (its logs), though neither their cwd nor
 * their command line names the data dir, and they outlive a master killed with SIGKILL.
 */
function holdsFileUnder(pid: string, inside: string): boolean {
  for (const fd of readdirSync(`/proc/${pid}/fd`)) {
    try {
      if (readlinkSync(`/proc/${pid}/fd/${fd}`).startsWith(inside)) return true;
    } catch {
      // closed meanwhile
    }
  }
  return false;
}

/**
 * Lazily unmounts whatever is still mounted under a data dir, deepest first: a container's root (overlay) that its
 * engine's cleanup, started when the test killed it, has not unmounted yet.
 */
export function unmountUnder(dataDir: string) {
  const inside = `${dataDir}/`;
  const points = readFileSync('/proc/self/mounts', 'utf8')
    .split('\n')
    .map((line) => line.split(' ')[1]?.replace(/\\040/g, ' '))
    .filter((point): point is string => !!point && point.startsWith(inside))
    .sort((a, b) => b.length - a.length);
  for (const point of points) spawnSync('umount', ['-l', point], { stdio: 'ignore' });
}
