import { readFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import tls from 'node:tls';
import { listenerCertificate } from './acme.js';

/** One RFC 5424 message as a log stream sends it. */
export interface SyslogFrame {
  pri: number;
  timestamp: string;
  hostname: string;
  appName: string;
  procId: string;
  msgId: string;
  structuredData: string;
  message: string;
  /** When the receiver read it (Date.now()). */
  receivedAt: number;
}

const RFC5424 = /^<(\d{1,3})>1 (\S+) (\S+) (\S+) (\S+) (\S+) ((?:\[(?:[^\]"]|"(?:[^"\\]|\\.)*")*\])+|-) (.*)$/s;

/**
 * A TLS syslog receiver on 127.0.0.1 with a CA made for it (`caFile`, for SLIPWAY_LOG_STREAM_CA_FILE): it parses
 * octet-counting frames (RFC 6587) and fails the test's frames list with `invalid` for anything else. `down()` stops
 * listening and ends its connections gracefully (what was sent is read); `up()` listens again on the same port.
 */
export async function startSyslogServer(dir: string) {
  const cert = await listenerCertificate(dir);
  const frames: SyslogFrame[] = [];
  const invalid: string[] = [];
  const sockets = new Set<tls.TLSSocket>();
  const server = tls.createServer({ key: readFileSync(cert.key), cert: readFileSync(cert.cert) }, (socket) => {
    sockets.add(socket);
    let buffered = Buffer.alloc(0);
    socket.on('data', (chunk: Buffer) => {
      buffered = Buffer.concat([buffered, chunk]);
      for (;;) {
        const space = buffered.indexOf(0x20);
        if (space < 0) break;
        const length = buffered.subarray(0, space).toString('ascii');
        if (!/^[1-9][0-9]{0,8}$/.test(length)) {
          invalid.push(`bad frame length "${length}"`);
          socket.destroy();
          return;
        }
        const end = space + 1 + Number(length);
        if (buffered.length < end) break;
        const text = buffered.subarray(space + 1, end).toString('utf8');
        buffered = buffered.subarray(end);
        const m = RFC5424.exec(text);
        if (!m) invalid.push(`not RFC 5424: ${text.slice(0, 200)}`);
        else
          frames.push({
            pri: Number(m[1]),
            timestamp: m[2]!,
            hostname: m[3]!,
            appName: m[4]!,
            procId: m[5]!,
            msgId: m[6]!,
            structuredData: m[7]!,
            message: m[8]!,
            receivedAt: Date.now(),
          });
      }
    });
    socket.on('error', () => undefined);
    socket.on('close', () => sockets.delete(socket));
  });
  const listen = (port: number) =>
    new Promise<number>((resolve) =>
      server.listen(port, '127.0.0.1', () => resolve((server.address() as AddressInfo).port)),
    );
  const port = await listen(0);
  return {
    port,
    caFile: cert.ca,
    frames,
    invalid,
    /** Stops accepting, ends each connection and waits until the client closed it (everything sent is read). */
    async down() {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      for (const socket of sockets) socket.end();
      await closed;
    },
    up: () => listen(port),
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
export type SyslogServer = Awaited<ReturnType<typeof startSyslogServer>>;
