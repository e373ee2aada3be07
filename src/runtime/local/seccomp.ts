/**
 * The seccomp filter of every sandboxed app and build (bwrap loads it with `--seccomp FD` after setting up the
 * sandbox, so bwrap itself may still mount and unshare). It follows Docker's default profile where that profile
 * denies: syscalls that reach kernel-global state (modules, kexec, swap, clock, mounts, keyrings), new namespaces,
 * and large attack surface an app does not need (bpf, perf, userfaultfd, io_uring). Apps run as an unprivileged
 * user already, so most of these would fail anyway; the filter keeps a kernel bug in one of them from mattering.
 *
 * Decisions where Docker varies:
 * - ptrace, process_vm_readv/writev, kcmp, pidfd_getfd, process_madvise are denied (Docker allows ptrace on kernels
 *   ≥ 4.8): every app and datastore runs as the same user, so only the pid namespace keeps one from another's
 *   memory; denying them keeps that a single mistake away from mattering. Debuggers (gdb, strace) do not work.
 * - clone and unshare are refused only with namespace flags (Docker's rule); clone3, whose flags seccomp cannot
 *   read, answers ENOSYS, so libc falls back to clone (Docker does the same).
 * - 32-bit (i386) and x32 syscalls are refused: the table below would not match their numbers.
 * - adjtimex stays allowed (reading the clock's state; setting it needs CAP_SYS_TIME, which apps lack).
 */

/** Syscall numbers, per architecture (x86_64: arch/x86/entry/syscalls/syscall_64.tbl; aarch64: asm-generic/unistd.h). */
const DENIED: Record<string, { x64?: number; arm64?: number }> = {
  // kernel modules and kexec
  init_module: { x64: 175, arm64: 105 },
  finit_module: { x64: 313, arm64: 273 },
  delete_module: { x64: 176, arm64: 106 },
  create_module: { x64: 174 },
  get_kernel_syms: { x64: 177 },
  query_module: { x64: 178 },
  kexec_load: { x64: 246, arm64: 104 },
  kexec_file_load: { x64: 320, arm64: 294 },
  reboot: { x64: 169, arm64: 142 },
  // machine-wide state: swap, clock, accounting, quotas, kernel log, obsolete interfaces
  swapon: { x64: 167, arm64: 224 },
  swapoff: { x64: 168, arm64: 225 },
  acct: { x64: 163, arm64: 89 },
  settimeofday: { x64: 164, arm64: 170 },
  clock_settime: { x64: 227, arm64: 112 },
  clock_adjtime: { x64: 305, arm64: 266 },
  quotactl: { x64: 179, arm64: 60 },
  quotactl_fd: { x64: 443, arm64: 443 },
  syslog: { x64: 103, arm64: 116 },
  lookup_dcookie: { x64: 212, arm64: 18 },
  nfsservctl: { x64: 180, arm64: 42 },
  vhangup: { x64: 153, arm64: 58 },
  iopl: { x64: 172 },
  ioperm: { x64: 173 },
  uselib: { x64: 134 },
  ustat: { x64: 136 },
  sysfs: { x64: 139 },
  _sysctl: { x64: 156 },
  // mounts and namespaces
  mount: { x64: 165, arm64: 40 },
  umount2: { x64: 166, arm64: 39 },
  pivot_root: { x64: 155, arm64: 41 },
  open_tree: { x64: 428, arm64: 428 },
  move_mount: { x64: 429, arm64: 429 },
  fsopen: { x64: 430, arm64: 430 },
  fsconfig: { x64: 431, arm64: 431 },
  fsmount: { x64: 432, arm64: 432 },
  fspick: { x64: 433, arm64: 433 },
  mount_setattr: { x64: 442, arm64: 442 },
  setns: { x64: 308, arm64: 268 },
  // kernel keyrings (not namespaced)
  add_key: { x64: 248, arm64: 217 },
  request_key: { x64: 249, arm64: 218 },
  keyctl: { x64: 250, arm64: 219 },
  // other processes' memory
  ptrace: { x64: 101, arm64: 117 },
  process_vm_readv: { x64: 310, arm64: 270 },
  process_vm_writev: { x64: 311, arm64: 271 },
  kcmp: { x64: 312, arm64: 272 },
  pidfd_getfd: { x64: 438, arm64: 438 },
  process_madvise: { x64: 440, arm64: 440 },
  // file handles bypass path permissions
  name_to_handle_at: { x64: 303, arm64: 264 },
  open_by_handle_at: { x64: 304, arm64: 265 },
  // large kernel attack surface
  bpf: { x64: 321, arm64: 280 },
  perf_event_open: { x64: 298, arm64: 241 },
  userfaultfd: { x64: 323, arm64: 282 },
  fanotify_init: { x64: 300, arm64: 262 },
  io_uring_setup: { x64: 425, arm64: 425 },
  io_uring_enter: { x64: 426, arm64: 426 },
  io_uring_register: { x64: 427, arm64: 427 },
};

/** CLONE_NEWNS | CLONE_NEWCGROUP | CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNET. */
const CLONE_NAMESPACES = 0x00020000 | 0x02000000 | 0x04000000 | 0x08000000 | 0x10000000 | 0x20000000 | 0x40000000;
/** unshare also takes CLONE_NEWTIME (0x80, which in clone's flags is part of the exit signal). */
const UNSHARE_NAMESPACES = CLONE_NAMESPACES | 0x80;
/** Allowed unless their first argument (the flags) has one of these bits. */
const FLAG_CHECKED: Record<string, { x64: number; arm64: number; mask: number }> = {
  clone: { x64: 56, arm64: 220, mask: CLONE_NAMESPACES },
  unshare: { x64: 272, arm64: 97, mask: UNSHARE_NAMESPACES },
};
const CLONE3 = { x64: 435, arm64: 435 };

const ARCHES = {
  x64: { audit: 0xc000003e, x32Bit: 0x40000000 }, // AUDIT_ARCH_X86_64; x32 syscalls have this bit set
  arm64: { audit: 0xc00000b7, x32Bit: undefined }, // AUDIT_ARCH_AARCH64
} as const;
export type SeccompArch = keyof typeof ARCHES;

// Classic BPF (linux/filter.h, linux/seccomp.h).
const LD_W_ABS = 0x20;
const JEQ_K = 0x15;
const JGE_K = 0x35;
const JSET_K = 0x45;
const RET_K = 0x06;
const RET_ALLOW = 0x7fff0000;
const RET_ERRNO = 0x00050000;
const EPERM = 1;
const ENOSYS = 38;
/** struct seccomp_data: int nr; u32 arch; u64 instruction_pointer; u64 args[6]. Both arches are little-endian. */
const NR_OFFSET = 0;
const ARCH_OFFSET = 4;
const ARG0_LOW_OFFSET = 16;

type Target = 'allow' | 'deny' | 'enosys' | 'next' | `flags:${string}`;
type Insn = { code: number; k: number; jt?: Target; jf?: Target; label?: string };

/** The syscalls the filter refuses outright on `arch`, name → number (clone and unshare only with namespace flags; clone3 ENOSYS). */
export function deniedSyscalls(arch: SeccompArch): Record<string, number> {
  return Object.fromEntries(
    Object.entries(DENIED).flatMap(([name, nr]) => (nr[arch] === undefined ? [] : [[name, nr[arch]]])),
  );
}

/** True when this machine's architecture has a table above. */
export const seccompArch = (nodeArch: string = process.arch): SeccompArch | undefined =>
  nodeArch === 'x64' || nodeArch === 'arm64' ? nodeArch : undefined;

/** The compiled filter for `arch`: an array of struct sock_filter {u16 code; u8 jt; u8 jf; u32 k}, as bwrap's --seccomp reads it. */
export function seccompProgram(arch: SeccompArch): Buffer {
  const { audit, x32Bit } = ARCHES[arch];
  const insns: Insn[] = [
    { code: LD_W_ABS, k: ARCH_OFFSET },
    { code: JEQ_K, k: audit, jt: 'next', jf: 'deny' },
    { code: LD_W_ABS, k: NR_OFFSET },
  ];
  if (x32Bit !== undefined) insns.push({ code: JGE_K, k: x32Bit, jt: 'deny', jf: 'next' });
  for (const nr of Object.values(deniedSyscalls(arch))) insns.push({ code: JEQ_K, k: nr, jt: 'deny', jf: 'next' });
  insns.push({ code: JEQ_K, k: CLONE3[arch], jt: 'enosys', jf: 'next' });
  for (const [name, nr] of Object.entries(FLAG_CHECKED))
    insns.push({ code: JEQ_K, k: nr[arch], jt: `flags:${name}`, jf: 'next' });
  insns.push({ code: RET_K, k: RET_ALLOW });
  // Classic BPF only jumps forward: the flag checks come before the shared returns.
  for (const [name, { mask }] of Object.entries(FLAG_CHECKED)) {
    insns.push({ code: LD_W_ABS, k: ARG0_LOW_OFFSET, label: `flags:${name}` });
    insns.push({ code: JSET_K, k: mask, jt: 'deny', jf: 'allow' });
  }
  insns.push({ code: RET_K, k: RET_ALLOW, label: 'allow' });
  insns.push({ code: RET_K, k: RET_ERRNO | EPERM, label: 'deny' });
  insns.push({ code: RET_K, k: RET_ERRNO | ENOSYS, label: 'enosys' });
  return assemble(insns);
}

/** Resolves labels to the forward jump offsets classic BPF needs (relative to the next instruction, at most 255). */
function assemble(insns: Insn[]): Buffer {
  const at = new Map(insns.flatMap((insn, i) => (insn.label ? [[insn.label, i] as const] : [])));
  const offset = (from: number, target: Target | undefined): number => {
    if (target === undefined || target === 'next') return 0;
    const to = at.get(target);
    if (to === undefined || to <= from || to - from - 1 > 255)
      throw new Error(`seccomp: cannot jump from ${from} to ${target}`);
    return to - from - 1;
  };
  const out = Buffer.alloc(insns.length * 8);
  insns.forEach((insn, i) => {
    out.writeUInt16LE(insn.code, i * 8);
    out.writeUInt8(offset(i, insn.jt), i * 8 + 2);
    out.writeUInt8(offset(i, insn.jf), i * 8 + 3);
    out.writeUInt32LE(insn.k >>> 0, i * 8 + 4);
  });
  return out;
}

/**
 * The same filter as an OCI seccomp profile (what Podman's `--security-opt seccomp=` reads) for containers: the same
 * refusals, each namespace flag of clone and unshare as a rule of its own (a profile's argument checks are ANDed).
 */
export function seccompProfile(arch: SeccompArch): string {
  const bits = (mask: number) => [...Array(32).keys()].map((i) => 2 ** i).filter((bit) => (mask & bit) !== 0);
  const deny = { action: 'SCMP_ACT_ERRNO', errnoRet: EPERM };
  const syscalls = [
    { names: Object.keys(deniedSyscalls(arch)), ...deny },
    { names: ['clone3'], action: 'SCMP_ACT_ERRNO', errnoRet: ENOSYS },
    ...Object.entries(FLAG_CHECKED).flatMap(([name, { mask }]) =>
      bits(mask).map((bit) => ({
        names: [name],
        ...deny,
        args: [{ index: 0, value: bit, valueTwo: bit, op: 'SCMP_CMP_MASKED_EQ' }],
      })),
    ),
  ];
  const architectures = arch === 'x64' ? ['SCMP_ARCH_X86_64'] : ['SCMP_ARCH_AARCH64'];
  return JSON.stringify({ defaultAction: 'SCMP_ACT_ALLOW', defaultErrnoRet: EPERM, architectures, syscalls });
}
