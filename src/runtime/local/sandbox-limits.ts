import { run } from '../../lib/exec.js';
import type { Limits } from '../../model/limits.js';
import { sandboxedCommand, type SandboxPolicy, type SandboxedProcess } from './sandbox.js';
import { seccompArch, seccompProgram } from './seccomp.js';

type Bwrap = NonNullable<SandboxPolicy['bwrap']>;

/** Runs `command` in the sandbox `policy` describes; undefined when it exits 0, else why not. */
async function probe(
  policy: SandboxPolicy,
  command: string,
  extra: Partial<SandboxedProcess> = {},
): Promise<string | undefined> {
  const proc: SandboxedProcess = {
    kind: 'build',
    command,
    env: {},
    cwd: '/',
    readOnlyDirs: [],
    writableDirs: [],
    cgroupProcsFiles: [],
    ...extra,
  };
  const result = await run(sandboxedCommand(policy, proc), { timeoutMs: 10_000 });
  return result.exitCode === 0 ? undefined : result.output.trim() || `exit ${result.exitCode ?? result.signal}`;
}

/**
 * What a working bwrap can enforce beyond isolation, each proven by a sandboxed probe: a size for /tmp and the
 * scratch dirs (bwrap ≥ 0.7, --size) and the seccomp filter. Each one missing is explained in `notes`.
 */
export async function detectSandboxLimits(
  policy: SandboxPolicy,
  notes: string[],
): Promise<Pick<Bwrap, 'tmpfsSize' | 'seccomp'>> {
  const found: Pick<Bwrap, 'tmpfsSize' | 'seccomp'> = {};
  if (!policy.bwrap) return found;
  const help = await run({ file: policy.bwrap.path, args: ['--help'], env: {} }, { timeoutMs: 10_000 });
  if (!help.output.includes('--size')) {
    notes.push(
      'writable disk is not size-limited: this bwrap has no --size (bubblewrap 0.7 or later has it), so $HOME and /tmp are tmpfs bounded only by the memory limit',
    );
  } else {
    // A 1 MiB /tmp must refuse 2 MiB.
    const sized: SandboxPolicy = { ...policy, bwrap: { ...policy.bwrap, tmpfsSize: true } };
    const failure = await probe(sized, 'head -c 2097152 /dev/zero > /tmp/fill 2>/dev/null && exit 1; exit 0', {
      diskBytes: 1024 * 1024,
    });
    if (failure)
      notes.push(
        `writable disk is not size-limited: a sized tmpfs failed here (${failure}), so $HOME and /tmp are bounded only by the memory limit`,
      );
    else found.tmpfsSize = true;
  }

  const arch = seccompArch();
  if (!arch) {
    notes.push(`no seccomp filter is applied: Slipway has no syscall table for ${process.arch} (x64 and arm64 only)`);
  } else if (!help.output.includes('--seccomp')) {
    notes.push('no seccomp filter is applied: this bwrap has no --seccomp option');
  } else {
    const seccomp = seccompProgram(arch);
    const failure = await probe(
      { ...policy, bwrap: { ...policy.bwrap, seccomp } },
      'grep -q "^Seccomp:[[:space:]]*2" /proc/self/status',
    );
    if (failure)
      notes.push(
        `no seccomp filter is applied: loading it failed here (${failure}), so apps may use syscalls containers normally block (mount, keyctl, bpf, unshare, ...)`,
      );
    else found.seccomp = seccomp;
  }
  return found;
}

/** The operator's overrides of every plan's process and disk limits (SLIPWAY_PIDS_LIMIT, SLIPWAY_DISK_LIMIT_MB). */
export type LimitOverrides = Partial<Pick<Limits, 'pids' | 'diskMb'>>;

export const withOverrides = (limits: Limits, overrides: LimitOverrides = {}): Limits => ({
  ...limits,
  ...(overrides.pids ? { pids: overrides.pids } : {}),
  ...(overrides.diskMb ? { diskMb: overrides.diskMb } : {}),
});
