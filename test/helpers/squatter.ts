import net from 'node:net';
import { sleep } from './process.js';

/**
 * A listener on another tenant's port, run the way an attacker would (issue 10): it takes the port the moment it is
 * free, records every byte it is sent, and plays just enough of each protocol to be handed a secret: to a Postgres
 * client it answers SSLRequest with "no" and the startup message with AuthenticationCleartextPassword (a client that
 * does not insist on SCRAM then sends its password in clear); to a Redis client it says +OK to everything (AUTH is
 * sent unprompted, as the first command).
 */
export interface Squatter {
  port: number;
  /** Connections accepted so far. */
  connections: number;
  /** Everything received, in order. */
  bytes(): Buffer;
  close(): Promise<void>;
}

const SSL_REQUEST = 80877103;
const PROTOCOL_3 = 196608;
/** 'R', length 8, code 3: AuthenticationCleartextPassword. */
const ASK_CLEARTEXT_PASSWORD = Buffer.from([0x52, 0, 0, 0, 8, 0, 0, 0, 3]);

function answer(socket: net.Socket, chunk: Buffer): void {
  if (chunk.length >= 8 && chunk[0] === 0) {
    const code = chunk.readInt32BE(4);
    if (code === SSL_REQUEST) socket.write('N');
    else if (code === PROTOCOL_3) socket.write(ASK_CLEARTEXT_PASSWORD);
    return;
  }
  if (chunk[0] === 0x2a /* '*': a Redis command */)
    socket.write('+OK\r\n'.repeat(Math.max(1, chunk.toString('latin1').split('\r\n*').length)));
}

function listenOnce(server: net.Server, port: number): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen({ port, host: '127.0.0.1', exclusive: true }, () => {
      server.off('error', reject);
      resolve();
    });
  });
}

/** Binds 127.0.0.1:`port` as soon as it is free (polling every few ms, like the attacker's loop). */
export async function squat(port: number, timeoutMs = 15_000): Promise<Squatter> {
  const received: Buffer[] = [];
  const sockets = new Set<net.Socket>();
  let connections = 0;
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const server = net.createServer((socket) => {
      connections++;
      sockets.add(socket);
      socket.on('data', (chunk: Buffer) => {
        received.push(chunk);
        answer(socket, chunk);
      });
      socket.on('error', () => undefined);
      socket.on('close', () => sockets.delete(socket));
    });
    try {
      await listenOnce(server, port);
      return {
        port,
        get connections() {
          return connections;
        },
        bytes: () => Buffer.concat(received),
        close: () => {
          for (const socket of sockets) socket.destroy();
          return new Promise((resolve) => server.close(() => resolve()));
        },
      };
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EADDRINUSE' || Date.now() > deadline) throw err;
      await sleep(2);
    }
  }
}
