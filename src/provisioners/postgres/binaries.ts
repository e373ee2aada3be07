import { execFileSync } from 'node:child_process';
import { accessSync, constants, existsSync, readdirSync, realpathSync } from 'node:fs';
import path from 'node:path';

/** One installed PostgreSQL server: the programs the local provisioner runs. */
export interface PostgresInstall {
  major: string;
  initdb: string;
  postgres: string;
}

/** Debian/Ubuntu install every major side by side here, none of them on PATH by default. */
const DEBIAN_ROOT = '/usr/lib/postgresql';

function isExecutable(file: string): boolean {
  try {
    accessSync(file, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

function candidateDirs(extra: string[]): string[] {
  const debian = existsSync(DEBIAN_ROOT)
    ? readdirSync(DEBIAN_ROOT).map((major) => path.join(DEBIAN_ROOT, major, 'bin'))
    : [];
  const onPath = (process.env.PATH ?? '').split(path.delimiter).filter(Boolean);
  return [...extra, ...onPath, ...debian];
}

/**
 * `postgres --version` prints e.g. "postgres (PostgreSQL) 15.20 (Debian 15.20-0+deb12u1)"; the major is the first number
 * (before 10 it was two: 9.6). Run synchronously, once per install at startup, because versions() is synchronous.
 */
function majorOf(postgres: string): string | undefined {
  try {
    const out = execFileSync(postgres, ['--version'], {
      encoding: 'utf8',
      timeout: 5000,
      stdio: ['ignore', 'pipe', 'ignore'],
    });
    const version = /\(PostgreSQL\)\s+(\d+)(?:\.(\d+))?/.exec(out);
    if (!version) return undefined;
    return Number(version[1]) >= 10 ? version[1] : `${version[1]}.${version[2]}`;
  } catch {
    return undefined;
  }
}

/**
 * Finds installed servers (a dir with both initdb and postgres) in `extraDirs`, on PATH and under /usr/lib/postgresql.
 * The first dir found wins for a major; symlinks to the same install count once.
 */
export function findPostgresInstalls(extraDirs: string[] = []): Map<string, PostgresInstall> {
  const installs = new Map<string, PostgresInstall>();
  const seen = new Set<string>();
  for (const dir of candidateDirs(extraDirs)) {
    const initdb = path.join(dir, 'initdb');
    const postgres = path.join(dir, 'postgres');
    if (!isExecutable(initdb) || !isExecutable(postgres)) continue;
    const real = realpathSync(postgres);
    if (seen.has(real)) continue;
    seen.add(real);
    const major = majorOf(postgres);
    if (major && !installs.has(major)) installs.set(major, { major, initdb: realpathSync(initdb), postgres: real });
  }
  return installs;
}

/** Sorted oldest first, numerically ('9.6' < '10' < '15'). */
export const sortVersions = (versions: Iterable<string>): string[] =>
  [...versions].sort((a, b) => parseFloat(a) - parseFloat(b));
