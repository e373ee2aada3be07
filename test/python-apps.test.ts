import { beforeAll, describe, expect, it } from 'vitest';
import { deployFixture, viaRouter, type ExtraFiles } from './helpers/apps.js';
import { signUp } from './helpers/client.js';
import { useServer } from './helpers/server.js';
import { buildWheel } from './helpers/wheels.js';

const t = useServer();

/** Render's instructions for flask-hello-world, and pip pointed at the wheelhouse uploaded with it (no PyPI here). */
const FLASK = {
  serviceDetails: {
    runtime: 'python',
    envSpecificDetails: { buildCommand: 'pip install -r requirements.txt', startCommand: 'gunicorn app:app' },
  },
  envVars: [
    { key: 'PIP_NO_INDEX', value: '1' },
    { key: 'PIP_FIND_LINKS', value: 'wheels' },
  ],
};
const withEnv = (vars: Array<{ key: string; value: string }>) => ({ ...FLASK, envVars: [...FLASK.envVars, ...vars] });

describe('Python apps, in a virtualenv', () => {
  let wheelhouse: ExtraFiles;
  beforeAll(async () => {
    const flask = await buildWheel('flask', '3.1.0+standin');
    const gunicorn = await buildWheel('gunicorn', '23.0.0+standin', { gunicorn: 'gunicorn.app:run' });
    wheelhouse = { [`wheels/${flask.file}`]: flask.data, [`wheels/${gunicorn.file}`]: gunicorn.data };
  });

  it("flask-hello-world: pip installs into the build's virtualenv (no PEP 668 refusal), and gunicorn serves it from there", async () => {
    const owner = await signUp(t.api);
    const { service, deploy } = await deployFixture(t.api, owner, 'flask-hello-world', FLASK, wheelhouse);
    expect(deploy.status, `${deploy.failureReason}\n${deploy.buildOutput}`).toBe('live');
    const res = await viaRouter(t.server.slipway.routerPort, service.slug, '/');
    expect(res.status).toBe(200);
    expect(res.text).toBe('Hello, World!');
    expect(deploy.buildOutput).toMatch(/==> Using Python 3\.\d+\.\d+, this machine's python3/);
    expect(deploy.buildOutput).toContain('==> Creating a virtualenv in .venv (VIRTUAL_ENV), which the instances use');
    expect(deploy.buildOutput).toMatch(/Successfully installed flask-3\.1\.0\+standin gunicorn-23\.0\.0\+standin/i);
    expect(deploy.buildOutput).not.toContain('externally-managed-environment');
  }, 120_000);

  it('PYTHON_VERSION is honoured when the host has that line, and refused within seconds, with what it has, when not', async () => {
    const owner = await signUp(t.api);
    const host = (await import('node:child_process'))
      .execFileSync('/usr/bin/python3', ['-c', 'import sys; print("%d.%d.%d" % sys.version_info[:3])'])
      .toString()
      .trim();
    const [major, minor] = host.split('.');
    const honoured = await deployFixture(
      t.api,
      owner,
      'flask-hello-world',
      withEnv([{ key: 'PYTHON_VERSION', value: `${major}.${minor}.99` }]),
      wheelhouse,
    );
    expect(honoured.deploy.status, honoured.deploy.failureReason).toBe('live');
    expect(honoured.deploy.buildOutput).toContain(
      `==> Using Python ${host} (from PYTHON_VERSION: "${major}.${minor}.99"; this machine has ${host} of that line)`,
    );

    const started = Date.now();
    const refused = await deployFixture(
      t.api,
      owner,
      'flask-hello-world',
      withEnv([{ key: 'PYTHON_VERSION', value: '3.4.10' }]),
      wheelhouse,
    );
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(refused.deploy.status).toBe('build_failed');
    expect(refused.deploy.failureReason).toMatch(
      new RegExp(
        `^Python "3\\.4\\.10" \\(from PYTHON_VERSION\\): this machine does not have it\\. It has: .*${host.replaceAll('.', '\\.')}`,
      ),
    );
  }, 120_000);
});
