import { isIP } from 'node:net';
import tls from 'node:tls';
import { isPublicAddress } from '../lib/ip-ranges.js';
import { guardedLookup } from './guarded-lookup.js';
import { parseEndpoint } from './syslog.js';

/** One TLS connection to a syslog endpoint. */
export interface SyslogConnection {
  /**
   * Resolves once `data` is handed to the kernel and the socket has drained (back-pressure: the caller writes the next
   * batch only then); rejects, and breaks the connection, on an error, a close or `writeTimeoutMs` without progress.
   */
  write(data: Buffer): Promise<void>;
  close(): void;
  readonly broken: boolean;
}
export type SyslogConnect = (endpoint: string) => Promise<SyslogConnection>;

export interface SyslogConnectOptions {
  /** SLIPWAY_LOG_STREAM_ALLOW_PRIVATE: reach loopback and private addresses too (internal receivers, tests). */
  allowPrivate: boolean;
  /** Certificates trusted besides Node's roots (SLIPWAY_LOG_STREAM_CA_FILE). */
  extraCa?: string;
  connectTimeoutMs: number;
  writeTimeoutMs: number;
}

/**
 * TLS over TCP to a tenant's `host:port`, with webhooks' SSRF guard: DNS answers are filtered to public addresses and
 * the address connected to is checked again (a literal address skips the lookup). The server's certificate is verified
 * against Node's roots (and `extraCa`) for the endpoint's host name.
 */
export function createSyslogConnector(options: SyslogConnectOptions): SyslogConnect {
  const lookup = guardedLookup(options.allowPrivate);
  const ca = options.extraCa ? [...tls.rootCertificates, options.extraCa] : undefined;
  const refusedAddress = (address: string | undefined) =>
    !options.allowPrivate && (!address || !isPublicAddress(address));

  return (endpoint) =>
    new Promise<SyslogConnection>((resolve, reject) => {
      const target = parseEndpoint(endpoint);
      if (!target) return reject(new Error(`${endpoint} is not host:port`));
      if (isIP(target.host) && refusedAddress(target.host))
        return reject(new Error(`refused: ${target.host} is a private or reserved address`));
      let broken = false;
      const socket = tls.connect({
        host: target.host,
        port: target.port,
        servername: isIP(target.host) ? undefined : target.host,
        lookup,
        ca,
        rejectUnauthorized: true,
      });
      const fail = (err: Error) => {
        broken = true;
        clearTimeout(connectTimer);
        socket.destroy();
        reject(err);
      };
      const connectTimer = setTimeout(
        () => fail(new Error(`connect timed out after ${options.connectTimeoutMs} ms`)),
        options.connectTimeoutMs,
      );
      socket.once('connect', () => {
        if (refusedAddress(socket.remoteAddress))
          fail(new Error(`refused: ${socket.remoteAddress ?? 'unknown address'} is a private or reserved address`));
      });
      socket.once('error', fail);
      socket.once('secureConnect', () => {
        clearTimeout(connectTimer);
        socket.off('error', fail);
        socket.on('error', () => (broken = true));
        socket.on('close', () => (broken = true));
        socket.resume(); // what the server says is not read: discarded, never buffered
        socket.setKeepAlive(true, 30_000);
        resolve({
          get broken() {
            return broken || socket.destroyed;
          },
          close: () => {
            broken = true;
            socket.end(); // after what is written; a socket that does not drain goes a second later
            setTimeout(() => socket.destroy(), 1000).unref();
          },
          write: (data) => write(data),
        });
      });

      function write(data: Buffer): Promise<void> {
        return new Promise<void>((done, failed) => {
          if (broken || socket.destroyed) return failed(new Error('connection closed'));
          const timer = setTimeout(() => {
            broken = true;
            socket.destroy();
            failed(new Error(`write timed out after ${options.writeTimeoutMs} ms`));
          }, options.writeTimeoutMs);
          const onClose = () => {
            clearTimeout(timer);
            failed(new Error('connection closed'));
          };
          socket.once('close', onClose);
          const settle = (err?: Error | null) => {
            clearTimeout(timer);
            socket.off('close', onClose);
            if (err) {
              broken = true;
              failed(err);
            } else done();
          };
          socket.write(data, (err) => {
            if (err || !socket.writableNeedDrain) return settle(err);
            socket.once('drain', () => settle());
          });
        });
      }
    });
}
