import { StringDecoder } from 'node:string_decoder';
import type { Command } from './launch.js';
import { launch } from './spawner.js';

export type { Command } from './launch.js';

/** The environment of a system tool Slipway runs for itself (cp, du, tar, hardlink): the system's dirs, the C locale. */
export const TOOL_ENV: Record<string, string> = { PATH: '/usr/bin:/bin', LC_ALL: 'C' };

/** Single-quotes a word for /bin/sh. */
export const shellQuote = (word: string): string => `'${word.replaceAll("'", `'\\''`)}'`;

export interface RunResult {
  exitCode: number | null;
  signal: NodeJS.Signals | null;
  timedOut: boolean;
  canceled: boolean;
  /** Ended by idleTimeoutMs: it printed nothing for that long (timedOut is set too). */
  stalled?: boolean;
  output: string;
  /** The kernel killed a process of it for going over its memory limit (set by the runtime's builds, which run in a cgroup). */
  oomKilled?: boolean;
}

export interface RunOptions {
  timeoutMs?: number;
  /** Ended (as a timeout, `stalled`) when it prints nothing for this long: a transport that hangs. */
  idleTimeoutMs?: number;
  signal?: AbortSignal;
  onOutput?(chunk: string): void;
  maxOutputBytes?: number;
}

const KILL_AFTER_MS = 2000;
/** After the program exits, how long its pipes may stay open (held by something that left its group) before we stop reading. */
const DRAIN_MS = 1000;
/** A line longer than this is passed on in pieces rather than held back. */
const MAX_PENDING_CHARS = 64 * 1024;

/** Signals a whole process group; a group that is already gone is not an error. */
export function killGroup(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pid, signal);
  } catch {
    // no such group any more
  }
}

/** Keeps the last `max` bytes of everything pushed. */
class OutputTail {
  private chunks: Buffer[] = [];
  private size = 0;
  constructor(private readonly max: number) {}

  push(text: string): void {
    const chunk = Buffer.from(text);
    this.chunks.push(chunk);
    this.size += chunk.length;
    // Drop whole chunks from the front while the rest still covers `max`.
    for (let first = this.chunks[0]; first && this.size - first.length >= this.max; first = this.chunks[0]) {
      this.chunks.shift();
      this.size -= first.length;
    }
  }

  toString(): string {
    const all = Buffer.concat(this.chunks);
    return all.subarray(Math.max(0, all.length - this.max)).toString();
  }
}

/** Decodes one stream and passes it on in whole lines where it can (so stdout and stderr interleave line by line). */
function lineChunker(emit: (chunk: string) => void) {
  const decoder = new StringDecoder('utf8');
  let pending = '';
  return {
    write(data: Buffer): void {
      pending += decoder.write(data);
      const cut = pending.lastIndexOf('\n') + 1 || (pending.length >= MAX_PENDING_CHARS ? pending.length : 0);
      if (cut === 0) return;
      emit(pending.slice(0, cut));
      pending = pending.slice(cut);
    },
    end(): void {
      pending += decoder.end();
      if (pending) emit(pending);
      pending = '';
    },
  };
}

/**
 * Runs to completion in its own process group; on timeout/abort kills the whole group (SIGTERM, SIGKILL after 2 s).
 * Whatever the program leaves running in its group when it exits is killed too. Output (stdout+stderr interleaved)
 * is passed to onOutput in line-ish chunks and the last maxOutputBytes (default 256 KiB) kept in `output`.
 * Never rejects for a non-zero exit; rejects only when the program cannot be spawned.
 */
export function run(cmd: Command, opts: RunOptions = {}): Promise<RunResult> {
  return new Promise((resolve, reject) => {
    const child = launch({ cmd, stdout: 'pipe', stderr: 'pipe' });
    let pid: number | undefined;
    const tail = new OutputTail(opts.maxOutputBytes ?? 256 * 1024);
    let idleTimer: NodeJS.Timeout | undefined;
    let stalled = false;
    const watchIdle = () => {
      if (opts.idleTimeoutMs === undefined) return;
      clearTimeout(idleTimer);
      idleTimer = setTimeout(() => {
        stalled = !exited;
        terminate('timeout');
      }, opts.idleTimeoutMs);
    };
    const emit = (chunk: string) => {
      tail.push(chunk);
      opts.onOutput?.(chunk);
    };
    const output = [lineChunker(emit), lineChunker(emit)] as const;
    // Any byte counts as a sign of life, a progress line without its newline too.
    child.on('data', (fd: 1 | 2, data: Buffer) => (watchIdle(), (fd === 1 ? output[0] : output[1]).write(data)));

    let timedOut = false;
    let canceled = false;
    let exited = false;
    let timeoutTimer: NodeJS.Timeout | undefined;
    let killTimer: NodeJS.Timeout | undefined;
    let drainTimer: NodeJS.Timeout | undefined;

    const terminate = (reason: 'timeout' | 'abort') => {
      if (exited || timedOut || canceled || pid === undefined) return;
      if (reason === 'timeout') timedOut = true;
      else canceled = true;
      killGroup(pid, 'SIGTERM');
      killTimer = setTimeout(() => killGroup(pid as number, 'SIGKILL'), KILL_AFTER_MS);
    };
    const onAbort = () => terminate('abort');
    const clearTimers = () => {
      clearTimeout(idleTimer);
      clearTimeout(timeoutTimer);
      clearTimeout(killTimer);
      clearTimeout(drainTimer);
      opts.signal?.removeEventListener('abort', onAbort);
    };

    child.once('error', (err: Error) => {
      clearTimers();
      reject(err);
    });
    child.once('spawn', (spawned: number) => {
      pid = spawned;
      if (exited) return;
      if (opts.timeoutMs !== undefined) timeoutTimer = setTimeout(() => terminate('timeout'), opts.timeoutMs);
      watchIdle();
      if (opts.signal?.aborted) onAbort();
      else opts.signal?.addEventListener('abort', onAbort, { once: true });
    });
    child.once('exit', () => {
      exited = true;
      // Whatever it left running in its group goes with it.
      if (pid !== undefined) killGroup(pid, 'SIGKILL');
      clearTimeout(idleTimer);
      clearTimeout(timeoutTimer);
      clearTimeout(killTimer);
      drainTimer = setTimeout(() => child.destroyOutput(), DRAIN_MS);
    });
    child.once('close', (exitCode: number | null, signal: NodeJS.Signals | null) => {
      clearTimers();
      output[0].end();
      output[1].end();
      resolve({ exitCode, signal, timedOut, canceled, ...(stalled ? { stalled } : {}), output: tail.toString() });
    });
  });
}

/**
 * Starts `cmd` in its own process group, not tied to this process: stdout/stderr are appended to files (no pipes),
 * so it keeps running when Slipway exits or restarts. Resolves with the pid once it is spawned; `onExit` runs if it
 * exits while Slipway is still up (it is reaped, so it does not linger as a zombie).
 */
export function spawnDetached(
  cmd: Command,
  files: { stdoutPath: string; stderrPath: string },
  onExit: (code: number | null, signal: NodeJS.Signals | null) => void,
  /** Resolve only once the program has written to its fd 3 (slirp4netns' `--ready-fd=3`), within this many ms. */
  readyWithinMs?: number,
): Promise<number> {
  const ready = readyWithinMs !== undefined;
  const child = launch({ cmd, stdout: files.stdoutPath, stderr: files.stderrPath, ready });
  child.once('exit', onExit);
  return new Promise((resolve, reject) => {
    let pid: number | undefined;
    child.once('error', reject);
    child.once('spawn', (spawned: number) => {
      pid = spawned;
      if (!ready) resolve(spawned);
    });
    if (!ready) return;
    const timer = setTimeout(
      () => done(new Error(`${cmd.file} was not ready within ${readyWithinMs} ms`)),
      readyWithinMs,
    );
    const done = (err?: Error) => {
      clearTimeout(timer);
      child.removeAllListeners('ready').removeAllListeners('ready-end');
      if (!err) return resolve(pid as number);
      if (pid !== undefined) process.kill(pid, 'SIGKILL'); // not ready in time: it is of no use
      reject(err);
    };
    child.once('ready', () => done());
    child.once('ready-end', () => done(new Error(`${cmd.file} exited before it was ready`)));
  });
}
