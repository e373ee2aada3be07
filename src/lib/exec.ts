import { spawn, type ChildProcess, type SpawnOptions } from 'node:child_process';
import type { Readable, Writable } from 'node:stream';
import { closeSync, openSync } from 'node:fs';
import { StringDecoder } from 'node:string_decoder';

/** An external program invocation, as data (built by pure functions, run here). */
export interface Command {
  file: string;
  args: string[];
  cwd?: string;
  /** The complete environment; when omitted the program inherits Slipway's. */
  env?: Record<string, string>;
  uid?: number;
  gid?: number;
  /**
   * Arguments the program reads from file descriptor 3, NUL-separated (bwrap's `--args 3`): kept
   * off the command line, which every local user can read in /proc/<pid>/cmdline.
   */
  fd3Args?: string[];
  /** Bytes the program reads from file descriptor 4 to its end (bwrap's `--seccomp 4`: the compiled filter). */
  fd4Data?: Buffer;
  /** Text the program reads on its standard input (e.g. `ip -batch -`); otherwise stdin is closed. */
  stdin?: string;
}

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

/** fds 3 and 4 of the child, when it reads from them (a pipe each; an fd it does not use is not opened). */
const extraFds = (cmd: Command): Array<'pipe' | 'ignore'> =>
  cmd.fd4Data ? [cmd.fd3Args ? 'pipe' : 'ignore', 'pipe'] : cmd.fd3Args ? ['pipe'] : [];
function sendExtraFds(cmd: Command, child: ChildProcess) {
  const send = (fd: number, data: string | Buffer) => {
    const pipe = child.stdio[fd] as Writable | null;
    pipe?.on('error', () => undefined); // a child that exits before reading: its exit status tells
    pipe?.end(data);
  };
  if (cmd.fd3Args) send(3, cmd.fd3Args.map((a) => `${a}\0`).join(''));
  if (cmd.fd4Data) send(4, cmd.fd4Data);
}

/** detached: a session and process group of its own (without a terminal), so the group can be signalled as a whole. */
function spawnOptions(cmd: Command): SpawnOptions {
  return { cwd: cmd.cwd, env: cmd.env, uid: cmd.uid, gid: cmd.gid, detached: true };
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
    const child = spawn(cmd.file, cmd.args, {
      ...spawnOptions(cmd),
      stdio: [cmd.stdin === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe', ...extraFds(cmd)],
    });
    sendExtraFds(cmd, child);
    child.stdin?.on('error', () => undefined); // a program that exits before reading: its exit status tells
    child.stdin?.end(cmd.stdin);
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
    const stdout = lineChunker(emit);
    const stderr = lineChunker(emit);
    // Any byte counts as a sign of life, a progress line without its newline too.
    child.stdout?.on('data', (data: Buffer) => (watchIdle(), stdout.write(data)));
    child.stderr?.on('data', (data: Buffer) => (watchIdle(), stderr.write(data)));

    let timedOut = false;
    let canceled = false;
    let exited = false;
    let timeoutTimer: NodeJS.Timeout | undefined;
    let killTimer: NodeJS.Timeout | undefined;
    let drainTimer: NodeJS.Timeout | undefined;

    const terminate = (reason: 'timeout' | 'abort') => {
      if (exited || timedOut || canceled || child.pid === undefined) return;
      if (reason === 'timeout') timedOut = true;
      else canceled = true;
      killGroup(child.pid, 'SIGTERM');
      killTimer = setTimeout(() => killGroup(child.pid as number, 'SIGKILL'), KILL_AFTER_MS);
    };
    const onAbort = () => terminate('abort');
    const clearTimers = () => {
      clearTimeout(idleTimer);
      clearTimeout(timeoutTimer);
      clearTimeout(killTimer);
      clearTimeout(drainTimer);
      opts.signal?.removeEventListener('abort', onAbort);
    };

    // Errors after a successful spawn only concern signalling through `child`, which we never do.
    child.on('error', (err) => {
      if (child.pid !== undefined) return;
      clearTimers();
      reject(err);
    });
    child.once('exit', () => {
      exited = true;
      killGroup(child.pid as number, 'SIGKILL');
      clearTimeout(idleTimer);
      clearTimeout(timeoutTimer);
      clearTimeout(killTimer);
      drainTimer = setTimeout(() => {
        child.stdout?.destroy();
        child.stderr?.destroy();
      }, DRAIN_MS);
    });
    child.once('close', (exitCode, signal) => {
      clearTimers();
      stdout.end();
      stderr.end();
      resolve({ exitCode, signal, timedOut, canceled, ...(stalled ? { stalled } : {}), output: tail.toString() });
    });

    if (child.pid === undefined) return; // spawn failed: 'error' follows
    if (opts.timeoutMs !== undefined) timeoutTimer = setTimeout(() => terminate('timeout'), opts.timeoutMs);
    watchIdle();
    if (opts.signal?.aborted) onAbort();
    else opts.signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/**
 * Starts `cmd` in its own process group, not tied to this process: stdout/stderr are appended to files (no pipes),
 * so it keeps running when Slipway exits or restarts. Resolves with the pid once it is spawned; `onExit` runs if it
 * exits while Slipway is still up (Node reaps it, so it does not linger as a zombie).
 */
export function spawnDetached(
  cmd: Command,
  files: { stdoutPath: string; stderrPath: string },
  onExit: (code: number | null, signal: NodeJS.Signals | null) => void,
  /** Resolve only once the program has written to its fd 3 (slirp4netns' `--ready-fd=3`), within this many ms. */
  readyWithinMs?: number,
): Promise<number> {
  const stdoutFd = openSync(files.stdoutPath, 'a', 0o640);
  const stderrFd = openSync(files.stderrPath, 'a', 0o640);
  try {
    if (readyWithinMs !== undefined && (cmd.fd3Args || cmd.fd4Data))
      throw new Error('a ready pipe takes fd 3: no fd3Args or fd4Data with it');
    const readyPipe: Array<'pipe'> = readyWithinMs === undefined ? [] : ['pipe'];
    const child = spawn(cmd.file, cmd.args, {
      ...spawnOptions(cmd),
      stdio: ['ignore', stdoutFd, stderrFd, ...readyPipe, ...extraFds(cmd)],
    });
    sendExtraFds(cmd, child);
    child.once('exit', onExit);
    child.unref();
    return new Promise((resolve, reject) => {
      child.on('error', reject); // a failure to spawn; later errors could only come from signalling through `child`
      if (readyWithinMs === undefined) return void child.once('spawn', () => resolve(child.pid as number));
      const ready = child.stdio[3] as Readable;
      const timer = setTimeout(
        () => done(new Error(`${cmd.file} was not ready within ${readyWithinMs} ms`)),
        readyWithinMs,
      );
      const done = (err?: Error) => {
        clearTimeout(timer);
        ready.destroy(); // the program keeps running; only the parent's end of the pipe goes
        (ready as unknown as { unref?(): void }).unref?.();
        if (err) {
          child.kill('SIGKILL'); // not ready in time: it is of no use
          reject(err);
        } else resolve(child.pid as number);
      };
      ready.once('data', () => done());
      ready.once('end', () => done(new Error(`${cmd.file} exited before it was ready`)));
    });
  } finally {
    // The child has its own copies.
    closeSync(stdoutFd);
    closeSync(stderrFd);
  }
}
