import { readdirSync, realpathSync } from 'node:fs';
import path from 'node:path';
import { run } from '../../lib/exec.js';
import type { PythonInstall } from '../types.js';

/** Where builds find programs (their PATH, and the dirs the sandbox shows): the host's Pythons are looked for there. */
const BIN_DIRS = ['/usr/local/bin', '/usr/bin', '/bin'];
/** Prints the version, then fails if the venv module (Debian's python3-venv) is missing. */
const PROBE = 'import sys; print("%d.%d.%d" % sys.version_info[:3]); import venv, ensurepip';

interface Found extends PythonInstall {
  /** Whether it can make a virtualenv (`-m venv` with pip). */
  venv: boolean;
}

const parse = (request: string) => /^(?:python-?)?(\d+)(?:\.(\d+))?(?:\.(\d+))?$/.exec(request.trim());

/**
 * The host's Pythons (`python3.N` on the builds' PATH), for builds that run in a virtualenv (docs/deploys.md,
 * "Runtime versions"). Python is not downloaded: a version is honoured where the host has that `python3.N`, and refused
 * with what it has otherwise. Each binary is asked its version once.
 */
export function createPythons() {
  let found: Promise<Found[]> | undefined;
  const probe = async (file: string): Promise<Found | undefined> => {
    const result = await run({ file, args: ['-c', PROBE], env: { PATH: '/usr/bin:/bin' } }, { timeoutMs: 10_000 });
    const version = /^(\d+\.\d+\.\d+)$/m.exec(result.output)?.[1];
    return version ? { version, path: file, venv: result.exitCode === 0 } : undefined;
  };
  /** Every distinct python3.N and python3 binary, the first of each real file in PATH order. */
  const scan = async (): Promise<Found[]> => {
    const files = new Map<string, string>();
    for (const dir of BIN_DIRS) {
      let names: string[];
      try {
        names = readdirSync(dir).filter((n) => /^python3(\.\d+)?$/.test(n));
      } catch {
        continue;
      }
      for (const name of names.sort()) {
        const file = path.join(dir, name);
        try {
          const real = realpathSync(file);
          if (!files.has(real)) files.set(real, file);
        } catch {
          // a dangling link
        }
      }
    }
    const probed = await Promise.all([...files.values()].map(probe));
    return probed.filter((p): p is Found => !!p);
  };
  const all = () => (found ??= scan());
  const listed = (pythons: Found[]) =>
    [...new Set(pythons.map((p) => p.version))].join(', ') || 'none (install python3)';

  return {
    /**
     * The Python a build asks for (`3.11`, `3.11.4`; undefined: python3), checked to make virtualenvs. A patch the
     * host does not have is served by the host's release of that minor (`note` says so); another minor is refused.
     */
    async resolve(request: string | undefined): Promise<PythonInstall> {
      const pythons = await all();
      let chosen: Found | undefined;
      let note: string | undefined;
      if (request === undefined) {
        chosen = pythons.find((p) => path.basename(p.path) === 'python3') ?? pythons[0];
        if (!chosen) throw new Error('this machine has no python3 (Debian: apt-get install python3 python3-venv)');
      } else {
        const wanted = parse(request);
        if (!wanted) throw new Error('it is not a Python version (3.13, or 3.13.5)');
        const [, major, minor, patch] = wanted;
        const line = pythons
          .filter((p) => p.version.startsWith(minor === undefined ? `${major}.` : `${major}.${minor}.`))
          .sort((a, b) => b.version.localeCompare(a.version, 'en', { numeric: true }));
        chosen = line.find((p) => patch === undefined || p.version === `${major}.${minor}.${patch}`) ?? line[0];
        if (!chosen) throw new Error(`this machine does not have it. It has: ${listed(pythons)}`);
        if (patch !== undefined && chosen.version !== `${major}.${minor}.${patch}`)
          note = `this machine has ${chosen.version} of that line`;
      }
      if (!chosen.venv)
        throw new Error(
          `${chosen.path} (${chosen.version}) cannot make a virtualenv: its venv module is missing ` +
            `(Debian: apt-get install python3-venv, or python${chosen.version.split('.').slice(0, 2).join('.')}-venv)`,
        );
      return { version: chosen.version, path: chosen.path, ...(note ? { note } : {}) };
    },
  };
}
