import { spawn, type ChildProcess } from 'node:child_process';
import { EventEmitter } from 'node:events';
import { closeSync, openSync } from 'node:fs';
import type { Readable, Writable } from 'node:stream';

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
   * Text the program reads from file descriptor 3 (a sandboxed app's environment, as shell code: sandbox.ts): kept off
   * the command line, which every local user can read in /proc/<pid>/cmdline.
   */
  fd3Data?: string;
  /** Bytes the program reads from file descriptor 4 to its end (bwrap's `--seccomp 4`: the compiled filter). */
  fd4Data?: Buffer;
  /** Text the program reads on its standard input (e.g. `ip -batch -`); otherwise stdin is closed. */
  stdin?: string;
}

/**
 * One program to start: where its stdout and stderr go ('pipe': to us, as `data` events; a path: appended to that
 * file, so it outlives us), and whether it says it is ready by writing to its fd 3 (slirp4netns' `--ready-fd=3`).
 */
export interface LaunchSpec {
  cmd: Command;
  stdout: 'pipe' | string;
  stderr: 'pipe' | string;
  ready?: boolean;
}

/**
 * A started program, as events: `spawn` (pid), `error` (it could not be spawned), `data` (fd 1 or 2, a Buffer),
 * `ready` / `ready-end` (it wrote to its fd 3, or closed it first), `exit` and `close` (code, signal), as Node's
 * ChildProcess has them. Started here (launchLocal) or by the spawner process (spawner.ts), with the same events.
 */
export interface Launch extends EventEmitter {
  /** Stops reading its output (what it left running may hold the pipes open): `close` follows. */
  destroyOutput(): void;
  /** Stops and restarts reading its output (its writes then block: backpressure), where it is read here. */
  pauseOutput?(): void;
  resumeOutput?(): void;
}

/** fds 3 and 4 of the child, when it reads from them (a pipe each; an fd it does not use is not opened). */
const extraFds = (cmd: Command): Array<'pipe' | 'ignore'> =>
  cmd.fd4Data ? [cmd.fd3Data !== undefined ? 'pipe' : 'ignore', 'pipe'] : cmd.fd3Data !== undefined ? ['pipe'] : [];

function sendInput(cmd: Command, child: ChildProcess, fd3: number) {
  const send = (fd: number, data: string | Buffer | undefined) => {
    const pipe = child.stdio[fd] as Writable | null;
    pipe?.on('error', () => undefined); // a child that exits before reading: its exit status tells
    pipe?.end(data);
  };
  send(0, cmd.stdin);
  if (cmd.fd3Data !== undefined) send(fd3, cmd.fd3Data);
  if (cmd.fd4Data) send(fd3 + 1, cmd.fd4Data);
}

/** Starts `spec` as a child of this process, in a session and process group of its own (without a terminal). */
export function launchLocal(spec: LaunchSpec): Launch {
  const { cmd } = spec;
  if (spec.ready && (cmd.fd3Data !== undefined || cmd.fd4Data))
    throw new Error('a ready pipe takes fd 3: no fd3Data or fd4Data with it');
  const launch = new EventEmitter() as Launch;
  const fds: number[] = [];
  const target = (to: 'pipe' | string) =>
    to === 'pipe' ? 'pipe' : (fds[fds.push(openSync(to, 'a', 0o640)) - 1] as number);
  let child: ChildProcess;
  try {
    child = spawn(cmd.file, cmd.args, {
      cwd: cmd.cwd,
      env: cmd.env,
      uid: cmd.uid,
      gid: cmd.gid,
      detached: true,
      stdio: [
        cmd.stdin === undefined ? 'ignore' : 'pipe',
        target(spec.stdout),
        target(spec.stderr),
        ...(spec.ready ? (['pipe'] as const) : []),
        ...extraFds(cmd),
      ],
    });
  } finally {
    for (const fd of fds) closeSync(fd); // the child has its own copies
  }
  sendInput(cmd, child, 3);
  // Errors after a successful spawn only concern signalling through `child`, which we never do.
  child.on('error', (err) => child.pid === undefined && launch.emit('error', err));
  child.once('spawn', () => launch.emit('spawn', child.pid));
  child.stdout?.on('data', (data: Buffer) => launch.emit('data', 1, data));
  child.stderr?.on('data', (data: Buffer) => launch.emit('data', 2, data));
  child.once('exit', (code, signal) => launch.emit('exit', code, signal));
  child.once('close', (code, signal) => launch.emit('close', code, signal));
  if (spec.ready) {
    const ready = child.stdio[3] as Readable;
    const done = (event: 'ready' | 'ready-end') => {
      ready.removeAllListeners('data').removeAllListeners('end');
      ready.destroy(); // the program keeps running; only our end of the pipe goes
      (ready as unknown as { unref?(): void }).unref?.();
      launch.emit(event);
    };
    ready.once('data', () => done('ready'));
    ready.once('end', () => done('ready-end'));
  }
  // Output to files: it runs on without us, and holds nothing of ours open.
  if (spec.stdout !== 'pipe') child.unref();
  launch.destroyOutput = () => {
    child.stdout?.destroy();
    child.stderr?.destroy();
  };
  launch.pauseOutput = () => (child.stdout?.pause(), child.stderr?.pause());
  launch.resumeOutput = () => (child.stdout?.resume(), child.stderr?.resume());
  return launch;
}
