import http from 'node:http';
import https from 'node:https';
import { isPublicAddress, literalAddress } from '../lib/ip-ranges.js';
import { guardedLookup, Refused } from './guarded-lookup.js';

/** One POST of a webhook delivery and what came back; `error` when there was no HTTP answer. */
export interface SendRequest {
  url: string;
  headers: Record<string, string>;
  body: string;
}
export interface SendResult {
  statusCode?: number;
  /** At most `maxResponseBytes` of the response body. */
  responseBody?: string;
  error?: string;
  durationMs: number;
}
/** The delivery port: core's dispatcher only sees this. */
export interface WebhookSender {
  send(request: SendRequest): Promise<SendResult>;
}

export interface SenderOptions {
  timeoutMs: number;
  maxResponseBytes: number;
  /** SLIPWAY_WEBHOOK_ALLOW_PRIVATE: reach loopback and private addresses too (internal receivers, tests). */
  allowPrivate: boolean;
}

/** node:http with the SSRF guard, a total time limit, no redirects (node never follows them) and a capped body. */
export function createHttpSender(options: SenderOptions): WebhookSender {
  const lookup = guardedLookup(options.allowPrivate);
  return {
    send(request) {
      const started = Date.now();
      return new Promise<SendResult>((resolve) => {
        let settled = false;
        const finish = (result: Omit<SendResult, 'durationMs'>) => {
          if (settled) return;
          settled = true;
          clearTimeout(timer);
          req.destroy();
          resolve({ ...result, durationMs: Date.now() - started });
        };
        const url = new URL(request.url);
        const literal = literalAddress(url.hostname);
        if (literal && !options.allowPrivate && !isPublicAddress(literal))
          return resolve({ error: `refused: ${literal} is a private or reserved address`, durationMs: 0 });
        const client = url.protocol === 'https:' ? https : http;
        const req = client.request(url, {
          method: 'POST',
          headers: { ...request.headers, 'content-length': Buffer.byteLength(request.body) },
          lookup,
          agent: false,
        });
        const timer = setTimeout(() => finish({ error: `timed out after ${options.timeoutMs} ms` }), options.timeoutMs);
        req.on('socket', (socket) => {
          // A literal address skips lookup: the address actually connected to is checked here as well.
          socket.on('connect', () => {
            const remote = socket.remoteAddress;
            if (!options.allowPrivate && (!remote || !isPublicAddress(remote)))
              finish({ error: `refused: ${remote ?? 'unknown address'} is a private or reserved address` });
          });
        });
        req.on('error', (err) => finish({ error: err instanceof Refused ? `refused: ${err.message}` : err.message }));
        req.on('response', (res) => {
          const chunks: Buffer[] = [];
          let size = 0;
          const done = () =>
            finish({ statusCode: res.statusCode, responseBody: Buffer.concat(chunks).toString('utf8') });
          res.on('data', (chunk: Buffer) => {
            const room = options.maxResponseBytes - size;
            if (room > 0) chunks.push(chunk.subarray(0, room));
            size += chunk.length;
            if (size >= options.maxResponseBytes) done(); // the rest is not read
          });
          res.on('end', done);
          res.on('error', done);
        });
        req.end(request.body);
      });
    },
  };
}
