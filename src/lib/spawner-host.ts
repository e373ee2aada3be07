/**
 * The spawner process (spawner.ts): starts programs for Slipway and relays their events. It exits when Slipway does
 * (its IPC channel closes); what it started in a session of its own (instances, servers) runs on.
 */
import { launchLocal, type Launch, type LaunchSpec } from './launch.js';

type Request = { op: 'launch'; id: number; spec: LaunchSpec } | { op: 'destroy'; id: number };

const launches = new Map<number, Launch>();
const MAX_IN_FLIGHT = 32;
const send = (message: Record<string, unknown>) => process.send?.(message);

function start(id: number, spec: LaunchSpec) {
  let launch: Launch;
  try {
    launch = launchLocal(spec);
  } catch (err) {
    const { message, code } = err as NodeJS.ErrnoException;
    return send({ id, ev: 'error', message, code });
  }
  launches.set(id, launch);
  launch.on('spawn', (pid: number) => send({ id, ev: 'spawn', pid }));
  launch.on('error', (err: NodeJS.ErrnoException) => {
    launches.delete(id);
    send({ id, ev: 'error', message: err.message, code: err.code });
  });
  // Output waits for Slipway to take it: past MAX_IN_FLIGHT chunks not yet through the channel, reading stops (the
  // program's writes block), so a build printing as fast as it can does not pile up in this process's memory.
  let inFlight = 0;
  launch.on('data', (fd: number, data: Buffer) => {
    if (++inFlight >= MAX_IN_FLIGHT) launch.pauseOutput?.();
    process.send?.({ id, ev: 'data', fd, data }, undefined, {}, () => {
      if (--inFlight === Math.floor(MAX_IN_FLIGHT / 2)) launch.resumeOutput?.();
    });
  });
  for (const ev of ['ready', 'ready-end'] as const) launch.on(ev, () => send({ id, ev }));
  launch.on('exit', (code: number | null, signal: string | null) => send({ id, ev: 'exit', code, signal }));
  launch.on('close', (code: number | null, signal: string | null) => {
    launches.delete(id);
    send({ id, ev: 'close', code, signal });
  });
}

process.on('message', (request: Request) => {
  if (request.op === 'launch') start(request.id, request.spec);
  else launches.get(request.id)?.destroyOutput();
});
process.on('disconnect', () => process.exit(0));
// A Ctrl-C in Slipway's terminal reaches this process's group too: Slipway decides when to stop, and may still start
// programs while it stops. The channel closing ends this process.
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) process.on(signal, () => undefined);
