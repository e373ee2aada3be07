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
      if (`${cwd}/`.startsWith(inside) || readFileSync(`/proc/${entry}/cmdline`, 'utf8').includes(inside))
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
