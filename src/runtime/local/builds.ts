import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { run, type RunResult } from '../../lib/exec.js';
import type { BuildSpec } from '../types.js';
import { giveTo, type LocalDeps } from './instances.js';
import { sandboxedCommand } from './sandbox.js';

/**
 * Runs a build command sandboxed like an instance, with the build dir writable (and handed to the app user) and a
 * throwaway HOME (npm's cache) unless env sets one. The sandbox dies with Slipway, and with the build on timeout.
 */
export async function runBuild(deps: LocalDeps, spec: BuildSpec): Promise<RunResult> {
  const { policy, cgroups, log } = deps;
  const name = `build-${randomBytes(6).toString('hex')}`;
  // Under the system tmp dir rather than the data dir: without bwrap the app user must still reach it by path.
  const home = mkdtempSync(path.join(tmpdir(), `slipway-${name}-`));
  const groupDirs = cgroups?.create(name, spec.limits) ?? [];
  try {
    giveTo(spec.dir, policy.runAs, true);
    giveTo(home, policy.runAs);
    const command = sandboxedCommand(policy, {
      kind: 'build',
      command: spec.command,
      env: { HOME: home, ...spec.env },
      cwd: spec.dir,
      readOnlyDirs: [],
      writableDirs: [spec.dir, home],
      cgroupProcsFiles: groupDirs.map((dir) => path.join(dir, 'cgroup.procs')),
    });
    return await run(command, { timeoutMs: spec.timeoutMs, signal: spec.signal, onOutput: spec.onOutput });
  } finally {
    rmSync(home, { recursive: true, force: true });
    const left = (await cgroups?.remove(groupDirs)) ?? [];
    if (left.length > 0) log?.warn({ cgroups: left }, 'could not remove the cgroups of a finished build');
  }
}
