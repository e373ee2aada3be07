import { isRunning } from '../runtime/local/proc.js';

/** A local server's process: its pid and start time, so that a reused pid is never taken for it. */
export interface RecordedProcess {
  pid: number;
  startTime: string;
}

/** The process a local server's placement state records (`pid`, `startTime`), if it records one. */
export function recordedProcess(state: unknown): RecordedProcess | undefined {
  const { pid, startTime } = (state ?? {}) as Partial<RecordedProcess>;
  return typeof pid === 'number' && typeof startTime === 'string' ? { pid, startTime } : undefined;
}

/** That process, while it runs (what the metrics sampler reads). */
export function runningProcess(state: unknown): RecordedProcess | undefined {
  const recorded = recordedProcess(state);
  return recorded && isRunning(recorded) ? recorded : undefined;
}
