import { existsSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { run, type Command } from '../../lib/exec.js';

/** pg_dump's environment: nothing of Slipway's (its secrets stay out), a fixed locale. */
const DUMP_ENV = { PATH: '/usr/bin:/bin', LC_ALL: 'C.UTF-8' };
/** A dump of a large database takes a while; one that runs longer than this is stuck. */
const DUMP_TIMEOUT_MS = 6 * 3_600_000;

/** Where a datastore's database is, as pg_dump takes it: libpq's parameters and any secret in its environment. */
export interface DumpSource {
  /** A libpq connection string or database name (`-d`); never holds a password. */
  dbname: string;
  host?: string;
  port?: number;
  user?: string;
  /** Where the program runs: a local server's socket dir, named `/proc/self/cwd` by `host` (short whatever its depth). */
  cwd?: string;
  /** PGPASSWORD: kept off the command line, which every local user can read. */
  password?: string;
}

/** A custom-format (`-Fc`) dump of one database into `file`, by `pgDump` (a version at least the server's). */
export function pgDumpCommand(pgDump: string, source: DumpSource, file: string): Command {
  return {
    file: pgDump,
    args: [
      '--format=custom',
      '--no-password',
      `--file=${file}`,
      ...(source.host ? [`--host=${source.host}`] : []),
      ...(source.port ? [`--port=${source.port}`] : []),
      ...(source.user ? [`--username=${source.user}`] : []),
      `--dbname=${source.dbname}`,
    ],
    env: { ...DUMP_ENV, ...(source.password ? { PGPASSWORD: source.password } : {}) },
    cwd: source.cwd ?? '/',
  };
}

export async function runDump(cmd: Command): Promise<void> {
  const result = await run(cmd, { timeoutMs: DUMP_TIMEOUT_MS, maxOutputBytes: 16 * 1024 });
  if (result.exitCode === 0) return;
  const how = result.timedOut ? 'timed out' : `exit ${result.exitCode ?? result.signal}`;
  throw new Error(`pg_dump failed (${how}): ${result.output.trim().slice(-2000)}`);
}

/** The newest pg_dump installed (Debian keeps each major's under /usr/lib/postgresql), else the one on PATH. */
export function newestPgDump(root = '/usr/lib/postgresql'): string {
  const majors = existsSync(root) ? readdirSync(root).sort((a, b) => parseFloat(b) - parseFloat(a)) : [];
  const found = majors.map((major) => path.join(root, major, 'bin', 'pg_dump')).find((file) => existsSync(file));
  return found ?? 'pg_dump';
}
