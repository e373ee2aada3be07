import type { Socket } from 'node:net';
import { WebSocket } from 'ws';
import type { LogRow } from '../../store/repos/logs.js';
import { logEntryBody } from './filters.js';

/**
 * The live log stream's write path. At thousands of entries a second times the subscribers,
 * ws's per-message send (a frame built and a syscall per entry, for each subscriber) was most
 * of Slipway's CPU. Here an entry's frame is built once for every subscriber of the process,
 * and a subscriber's batch goes out in one write. Messages are still one entry each.
 */

/** A final, unmasked text frame (RFC 6455 §5.2), as a server sends it. */
export function textFrame(payload: Buffer): Buffer {
  const n = payload.length;
  const head = n < 126 ? 2 : n < 65536 ? 4 : 10;
  const frame = Buffer.allocUnsafe(head + n);
  frame[0] = 0x81;
  if (n < 126) frame[1] = n;
  else if (n < 65536) {
    frame[1] = 126;
    frame.writeUInt16BE(n, 2);
  } else {
    frame[1] = 127;
    frame.writeBigUInt64BE(BigInt(n), 2);
  }
  payload.copy(frame, head);
  return frame;
}

/** A live row is the same object for every subscriber of a process. */
const frames = new WeakMap<LogRow, Buffer>();
function entryFrame(row: LogRow): Buffer {
  let frame = frames.get(row);
  if (!frame) frames.set(row, (frame = textFrame(Buffer.from(JSON.stringify(logEntryBody(row))))));
  return frame;
}

/**
 * Writes entries to an open subscriber as one TCP write, alongside ws's own writes (pings,
 * close) on the same socket. Valid because the server negotiates no extension (no
 * permessage-deflate, see http/app.ts), so a frame on the wire is exactly `textFrame`.
 */
export function writeEntries(socket: WebSocket, rows: LogRow[]) {
  if (!rows.length || socket.readyState !== WebSocket.OPEN) return;
  if (socket.extensions) throw new Error('log stream: WebSocket extensions are not supported');
  const tcp = (socket as unknown as { _socket: Socket })._socket;
  tcp.write(rows.length === 1 ? entryFrame(rows[0]!) : Buffer.concat(rows.map(entryFrame)));
}
