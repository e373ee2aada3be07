import { closeSync, openSync, readSync } from 'node:fs';

/** A TCP socket an app listens on, read from its namespace's socket table. */
export interface Listener {
  port: number;
  /** On 127.0.0.0/8 or ::1 only: nothing outside the app's namespace (the router, Slipway's checks) reaches it. */
  loopback: boolean;
}

/** The most of an app's socket table read at once (about 1,700 sockets). */
const SOCKET_TABLE_BYTES = 256 * 1024;
const LISTEN = '0A';
const IPV6_LOOPBACK = '00000000000000000000000001000000';

/**
 * The TCP ports listened on in the network namespace of `pid` (/proc/<pid>/net/tcp and tcp6: in a namespace of the
 * app's own, every socket there is the app's). Undefined when unreadable, or when the table is too large to read on
 * the event loop four times a second (an app with thousands of sockets gets no port detection rather than a stall).
 */
export function listenersOf(pid: number): Listener[] | undefined {
  const tcp = readCapped(`/proc/${pid}/net/tcp`);
  const tcp6 = readCapped(`/proc/${pid}/net/tcp6`);
  if (tcp === undefined || tcp.length >= SOCKET_TABLE_BYTES || (tcp6 ?? '').length >= SOCKET_TABLE_BYTES)
    return undefined;
  const byPort = new Map<number, boolean>();
  for (const line of `${tcp}\n${tcp6 ?? ''}`.split('\n')) {
    const columns = line.trim().split(/\s+/);
    if (columns[3] !== LISTEN || !columns[1]) continue;
    const [address, portHex] = columns[1].split(':');
    if (!address || !portHex) continue;
    const port = parseInt(portHex, 16);
    // A port counts as loopback-only while every socket on it is.
    byPort.set(port, (byPort.get(port) ?? true) && isLoopback(address));
  }
  return [...byPort].map(([port, loopback]) => ({ port, loopback })).sort((a, b) => a.port - b.port);
}

/** The table's hex addresses are in the kernel's byte order: 127.x.y.z reads "…7F", ::ffff:127.0.0.1 "…FFFF0000…7F". */
function isLoopback(hex: string): boolean {
  if (hex.length === 8) return hex.endsWith('7F');
  return hex === IPV6_LOOPBACK || (hex.startsWith('0000000000000000FFFF0000') && hex.endsWith('7F'));
}

/**
 * One buffer for every read: they are synchronous, and every starting instance is read four times a second (a
 * workspace starting a hundred must not allocate hundreds of megabytes a second).
 */
const buffer = Buffer.allocUnsafe(SOCKET_TABLE_BYTES);

/** A /proc file (its size reads as 0, so it is read until its end), at most SOCKET_TABLE_BYTES; undefined when unreadable. */
function readCapped(file: string): string | undefined {
  let fd: number | undefined;
  try {
    fd = openSync(file, 'r');
    let length = 0;
    for (let n = 1; n > 0 && length < buffer.length; length += n)
      n = readSync(fd, buffer, length, buffer.length - length, null);
    return buffer.toString('utf8', 0, length);
  } catch {
    return undefined;
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

/** What the listeners say about an app that does not answer on `port` yet. */
export type PortVerdict =
  | { kind: 'wait' }
  /** It listens there on loopback only: it will never be reached; fail with the fix. */
  | { kind: 'loopback'; port: number }
  /** It listens on another port, reachable, and not on `port`: route there (Render's port detection). */
  | { kind: 'other'; port: number };

/**
 * `port` itself reachable (or nothing opened yet): wait. `port` on loopback only: fail. Else the lowest other port the
 * app listens on reachably; else the lowest it listens on loopback only (a hard-coded `localhost:3000`).
 */
export function judgeListeners(listeners: Listener[], port: number): PortVerdict {
  const own = listeners.find((l) => l.port === port);
  if (own) return own.loopback ? { kind: 'loopback', port } : { kind: 'wait' };
  const reachable = listeners.find((l) => !l.loopback);
  if (reachable) return { kind: 'other', port: reachable.port };
  const local = listeners[0];
  return local ? { kind: 'loopback', port: local.port } : { kind: 'wait' };
}
