import { fork, type ChildProcess } from 'node:child_process';
import { EventEmitter } from 'node:events';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { launchLocal, type Launch, type LaunchSpec } from './launch.js';

/**
 * Programs are started by a small process of our own (spawner-host.ts), not by Slipway's: Node forks to spawn, and
 * a fork copies the page tables of the whole process. With Slipway's few hundred MB that took 30–70 ms per program
 * here, during which its event loop stood still (every deploy runs a dozen programs); from the spawner, a few ms,
 * away from the event loop (docs/architecture.md, "External programs").
 */
let host: ChildProcess | undefined;
let failed = false;
let nextId = 1;
const launches = new Map<number, Launch>();
/** The launches whose program runs in a session of its own with its output in files: it outlives the spawner. */
const detached = new Set<number>();
const spawned = new Set<number>();
/**
 * What this process still waits for, per launch: its output (to its close), its start (a detached program: to its
 * spawn), or its readiness. The channel keeps this process alive while it waits for anything, as a child's pipes would.
 */
const waiting = new Map<number, 'output' | 'start' | 'ready'>();

type Event = {
  id: number;
  ev: string;
  pid?: number;
  fd?: number;
  data?: Buffer;
  message?: string;
  code?: unknown;
  signal?: unknown;
};

/** The spawner's entry: the compiled file, or the TypeScript source under tsx's loader (dev, tests). */
function entry(): { file: string; execArgv: string[] } {
  const self = fileURLToPath(import.meta.url);
  if (!self.endsWith('.ts')) return { file: path.join(path.dirname(self), 'spawner-host.js'), execArgv: [] };
  const pkg = createRequire(import.meta.url).resolve('tsx/package.json');
  const loader = (JSON.parse(readFileSync(pkg, 'utf8')) as { exports: Record<string, string> }).exports['.']!;
  return {
    file: path.join(path.dirname(self), 'spawner-host.ts'),
    execArgv: ['--import', pathToFileURL(path.join(path.dirname(pkg), loader)).href],
  };
}

function onEvent(message: Event) {
  const launch = launches.get(message.id);
  if (!launch) return;
  if (message.ev === 'spawn') {
    spawned.add(message.id);
    if (waiting.get(message.id) === 'start') stopWaiting(message.id);
    return void launch.emit('spawn', message.pid);
  }
  if (message.ev === 'data') return void launch.emit('data', message.fd, message.data);
  if (message.ev === 'error' || message.ev === 'close') forget(message.id);
  if (message.ev === 'error')
    return void launch.emit('error', Object.assign(new Error(message.message), { code: message.code }));
  if (message.ev === 'exit' || message.ev === 'close')
    return void launch.emit(message.ev, message.code, message.signal);
  if (waiting.get(message.id) === 'ready') stopWaiting(message.id); // ready or not: nothing more to wait for
  launch.emit(message.ev);
}

function stopWaiting(id: number) {
  waiting.delete(id);
  holdWhileBusy();
}

function forget(id: number) {
  launches.delete(id);
  detached.delete(id);
  spawned.delete(id);
  stopWaiting(id);
}

function holdWhileBusy() {
  const channel = host?.channel as { ref?(): void; unref?(): void } | undefined;
  if (waiting.size > 0) channel?.ref?.();
  else channel?.unref?.();
}

function startHost(): ChildProcess | undefined {
  if (host?.connected) return host;
  if (failed) return undefined;
  try {
    const { file, execArgv } = entry();
    const child = fork(file, [], {
      execArgv,
      serialization: 'advanced',
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    child.on('message', (m: Event) => onEvent(m));
    child.on('error', () => undefined); // 'exit' follows
    child.once('exit', () => {
      if (host === child) host = undefined;
      for (const [id, launch] of launches) {
        const [outlives, started] = [detached.has(id), spawned.has(id)];
        forget(id);
        // An app or a server runs on without the spawner: its end, if it comes, is the supervisor's to see (it checks
        // every instance's process), not an exit to report now, which would take the app out of the route.
        if (outlives && started) continue;
        if (!started) launch.emit('error', new Error('the spawner process exited before the program started'));
        else {
          // What we were reading from is lost to us: it ends here as if killed (run() kills its group).
          launch.emit('exit', null, 'SIGKILL');
          launch.emit('close', null, 'SIGKILL');
        }
      }
    });
    child.unref();
    host = child;
    return child;
  } catch {
    failed = true; // no spawner here: programs start from this process, as before
    return undefined;
  }
}

/** Starts `spec` through the spawner process, or from this process where there is none. */
export function launch(spec: LaunchSpec): Launch {
  const spawner = startHost();
  if (!spawner) return launchLocal(spec);
  const id = nextId++;
  const launched = new EventEmitter() as Launch;
  launched.destroyOutput = () => void (spawner.connected && spawner.send({ op: 'destroy', id }));
  launches.set(id, launched);
  if (spec.stdout !== 'pipe') detached.add(id);
  waiting.set(id, spec.stdout === 'pipe' ? 'output' : spec.ready ? 'ready' : 'start');
  holdWhileBusy();
  // Its environment as it is now: the spawner's is a copy taken when it started.
  spawner.send({ op: 'launch', id, spec: { ...spec, cmd: { ...spec.cmd, env: spec.cmd.env ?? { ...process.env } } } });
  return launched;
}
