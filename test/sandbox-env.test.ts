/**
 * The app's environment is the tenant's to choose (PATH, LD_PRELOAD…), and the sandbox's first stages run as root
 * (the chown of the app's files, setpriv): they must never see it (docs/architecture.md, "Tenant isolation on one machine").
 */
import { execFileSync } from 'node:child_process';
import { chmodSync, copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { findProgram } from '../src/runtime/local/capabilities.js';
import { createLocalRuntime } from '../src/runtime/local/index.js';
import type { InstanceHandle } from '../src/runtime/types.js';

const IS_ROOT = process.getuid?.() === 0;
const CC = findProgram('cc');
const FIXTURES = fileURLToPath(new URL('fixtures/runtime', import.meta.url));
/** node must be found inside the sandbox wherever it is installed. */
const APP_PATH = `${path.dirname(process.execPath)}:/usr/bin:/bin`;

const dataDir = mkdtempSync(path.join(tmpdir(), 'slipway-sandbox-env-'));
chmodSync(dataDir, 0o700);
const appDir = path.join(dataDir, 'artifacts/dep-1');
mkdirSync(path.join(appDir, 'bin'), { recursive: true });
copyFileSync(path.join(FIXTURES, 'app.cjs'), path.join(appDir, 'app.cjs'));
const started: InstanceHandle[] = [];

describe.runIf(IS_ROOT && CC)("the app's environment", async () => {
  const runtime = await createLocalRuntime({ dataDir, network: 'shared' });
  afterAll(async () => {
    await Promise.all(started.map((handle) => runtime.stop(handle, 0)));
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('reaches the app user only: a tenant LD_PRELOAD and a chown first on its PATH never run as root', async () => {
    expect(runtime.capabilities.sandbox).toBe('bwrap');
    // A library that says which user loaded it, on stderr (the instance's log, where the sandbox's stages write too).
    const source = path.join(dataDir, 'whoami.c');
    writeFileSync(
      source,
      '#include <stdio.h>\n#include <unistd.h>\n' +
        '__attribute__((constructor)) static void say(void) { fprintf(stderr, "loaded by uid %d\\n", (int)getuid()); }\n',
    );
    execFileSync(CC!, ['-shared', '-fPIC', '-o', path.join(appDir, 'whoami.so'), source]);
    // A program named like one the sandbox runs as root, in the app's own dir, first on its PATH (relative: the cwd).
    writeFileSync(path.join(appDir, 'bin/chown'), '#!/bin/sh\necho "tenant chown ran as $(id -u)" >&2\n', {
      mode: 0o755,
    });

    const port = await runtime.instancePort();
    const instanceDir = path.join(dataDir, 'services/svc-a/instances/env-1');
    const handle = await runtime.start({
      instanceId: 'env-1',
      serviceId: 'svc-a',
      deployId: 'dep-1',
      instanceDir,
      command: 'node app.cjs',
      env: { PORT: String(port), PATH: `bin:${APP_PATH}`, LD_PRELOAD: path.join(appDir, 'whoami.so') },
      sandbox: { appDir, workDir: '', writableDirs: [path.join(instanceDir, 'tmp')] },
      limits: { memoryMb: 256, cpuMillicores: 500, pids: 256, diskMb: 64 },
    });
    started.push(handle);
    await runtime.waitHealthy({ host: '127.0.0.1', handle, port, path: '/health', timeoutMs: 10_000 });

    const log = readFileSync(handle.stderrPath, 'utf8');
    expect(log).toContain('loaded by uid 65534'); // the app's own processes do get it
    expect(log).not.toMatch(/loaded by uid 0\b/);
    expect(log).not.toContain('tenant chown ran');
  });
});
