/** What one instance or build may use, from its plan (model/services.ts PLAN_LIMITS); the runtime enforces it. */
export interface Limits {
  memoryMb: number;
  cpuMillicores: number;
  /** Processes and threads together (cgroup pids.max): a fork bomb stops here. */
  pids: number;
  /**
   * Size of each writable scratch filesystem of the sandbox ($HOME, /tmp, Sandbox.scratchDirs): tmpfs, so what is
   * written there is memory charged to the instance's memory limit, and never lands on the host's disk.
   */
  diskMb: number;
}
