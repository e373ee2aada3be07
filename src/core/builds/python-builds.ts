import path from 'node:path';
import { shellQuote } from '../../lib/exec.js';
import { DeployFailure } from '../service-state/failures.js';
import { pythonVersionRequest } from './runtime-versions.js';
import type { BuildContext, BuildTools } from './build-tools.js';

/** The virtualenv a Python build installs into, in the service's root dir (Render's is /opt/render/project/src/.venv). */
export const VENV = '.venv';

/**
 * After the build command, in its sandbox: the virtualenv's scripts (`gunicorn`, `flask`, pip's) start with the
 * interpreter's path at build time, a dir that instances do not see (they run the deploy's artifact, elsewhere). Their
 * first lines (and the second, where pip wrote a long path as `'''exec' … "$0"`) are rewritten to find `python3` on
 * the PATH, where the instances have the virtualenv first. Links (`python3` → the host's) are left alone.
 */
const RELOCATE_SCRIPT = [
  'import os, re, sys',
  'b = os.path.join(sys.argv[1], "bin")',
  'old = re.compile(re.escape(b.encode()) + rb"/python[0-9.]*")',
  'for n in os.listdir(b):',
  '    p = os.path.join(b, n)',
  '    if os.path.islink(p) or not os.path.isfile(p):',
  '        continue',
  '    with open(p, "rb") as f:',
  '        d = f.read()',
  '    if not d.startswith(b"#!"):',
  '        continue',
  '    lines = d.split(b"\\n", 2)',
  '    new = b"\\n".join([old.sub(b"/usr/bin/env python3", l) for l in lines[:2]] + lines[2:])',
  '    if new != d:',
  '        with open(p, "wb") as f:',
  '            f.write(new)',
].join('\n');

/**
 * A Python build (docs/deploys.md, "Runtime versions"): the Python it asks for (PYTHON_VERSION, .python-version) where
 * the host has that line, else the host's python3; a virtualenv made for it before the build command (so `pip install
 * -r requirements.txt` installs there, not into the system, which PEP 668 refuses), first on the build's PATH, and
 * kept in the deploy for its instances (VIRTUAL_ENV).
 */
export async function preparePython(at: BuildContext): Promise<BuildTools> {
  const { tools, say } = at;
  const request = pythonVersionRequest(at.env, at.workDir, at.repoRoot);
  const asked = request ? `Python ${JSON.stringify(request.value)} (from ${request.from})` : 'Python';
  const python = await tools.python(request?.value).catch((err: Error) => {
    throw new DeployFailure('build_failed', `${asked}: ${err.message}`);
  });
  say(
    request
      ? `Using Python ${python.version} (from ${request.from}: ${JSON.stringify(request.value)}${python.note ? `; ${python.note}` : ''})`
      : `Using Python ${python.version}, this machine's python3: no PYTHON_VERSION or .python-version asks for another`,
  );
  say(`Creating a virtualenv in ${path.join(at.service.rootDir, VENV) || VENV} (VIRTUAL_ENV), which the instances use`);
  const venv = path.join(at.workDir, VENV);
  return {
    env: {
      VIRTUAL_ENV: venv,
      PATH: [path.join(venv, 'bin'), at.env.PATH].filter(Boolean).join(':'),
      // pip asks PyPI whether it is the newest at every run: a request per build, and a wait where PyPI is unreachable.
      PIP_DISABLE_PIP_VERSION_CHECK: '1',
    },
    toolchain: { python: python.version, venv: path.join(at.service.rootDir, VENV) },
    nodeVersion: tools.hostNode,
    before: [`${shellQuote(python.path)} -m venv --clear ${VENV}`],
    after: [`${shellQuote(path.join(venv, 'bin', 'python'))} -c ${shellQuote(RELOCATE_SCRIPT)} ${shellQuote(venv)}`],
  };
}
