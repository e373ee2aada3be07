import { readFileSync } from 'node:fs';
import { Agent, request } from 'undici';

/** The Docker Engine API version Slipway speaks: Debian's docker.io 20.10 (docs/swarm.md). */
export const ENGINE_API_VERSION = 'v1.41';

/** TLS files for a `tcp://` Engine API (docker's own --tlsverify setup: a CA, a client certificate and its key). */
export interface EngineTls {
  ca: string;
  cert: string;
  key: string;
}

/** A call the engine refused: its status and its own message (`{"message": …}`). */
export class EngineError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

type Method = 'GET' | 'POST' | 'DELETE';
interface CallOptions {
  query?: Record<string, string>;
  body?: unknown;
}

/** A piece of a container's output as the engine multiplexes it: which stream, and the text. */
export interface Frame {
  stream: 'stdout' | 'stderr';
  text: string;
}

/** The engine's multiplexed stream: frames of an 8-byte header (stream type, then the size, big-endian) and the bytes. */
export function demux(raw: Buffer): Frame[] {
  const frames: Frame[] = [];
  for (let at = 0; at + 8 <= raw.length;) {
    const size = raw.readUInt32BE(at + 4);
    frames.push({ stream: raw[at] === 2 ? 'stderr' : 'stdout', text: raw.subarray(at + 8, at + 8 + size).toString() });
    at += 8 + size;
  }
  return frames;
}

export interface EngineApi {
  /** Where it is (`unix:///run/docker.sock`, `tcp://10.0.0.1:2376`), for messages. */
  host: string;
  /** A JSON call; rejects with EngineError on a status of 400 or more. `query` values are sent as given. */
  call<T>(method: Method, path: string, opts?: CallOptions): Promise<T>;
  /** A GET whose answer is a log stream (no TTY): its frames, the answer held to `maxBytes`. */
  frames(path: string, query: Record<string, string>, maxBytes: number): Promise<Frame[]>;
  close(): Promise<void>;
}

/**
 * A client of one Docker Engine's HTTP API: a unix socket (`unix:///path`) or TCP, with TLS when `tls` is given (a
 * swarm manager on another machine must not be reachable without a client certificate: it runs anything as root).
 */
export function engineApi(host: string, opts: { tls?: EngineTls; timeoutMs?: number } = {}): EngineApi {
  const unix = /^unix:\/\/(\/.+)$/.exec(host)?.[1];
  const tcp = /^tcp:\/\/([^/]+)$/.exec(host)?.[1];
  if (!unix && !tcp) throw new Error(`not a Docker Engine address: ${host} (unix:///path or tcp://host:port)`);
  const tls = opts.tls;
  const dispatcher = new Agent({
    connect: unix
      ? { socketPath: unix }
      : tls
        ? { ca: readFileSync(tls.ca), cert: readFileSync(tls.cert), key: readFileSync(tls.key) }
        : {},
    headersTimeout: opts.timeoutMs ?? 30_000,
    bodyTimeout: opts.timeoutMs ?? 30_000,
  });
  const origin = unix ? 'http://engine' : `${tls ? 'https' : 'http'}://${tcp}`;
  /** The answer's body, at most `maxBytes` of it; rejects with EngineError on a status of 400 or more. */
  const send = async (method: Method, path: string, call: CallOptions = {}, maxBytes = 16 * 1024 * 1024) => {
    const query = call.query ? `?${new URLSearchParams(call.query)}` : '';
    const res = await request(`${origin}/${ENGINE_API_VERSION}${path}${query}`, {
      method,
      dispatcher,
      headers: call.body === undefined ? {} : { 'content-type': 'application/json' },
      body: call.body === undefined ? undefined : JSON.stringify(call.body),
    });
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const chunk of res.body as AsyncIterable<Buffer>) {
      size += chunk.length;
      if (size > maxBytes) {
        res.body.destroy();
        throw new EngineError(413, `${method} ${path}: the answer is over ${maxBytes} bytes`);
      }
      chunks.push(chunk);
    }
    const body = Buffer.concat(chunks);
    if (res.statusCode >= 400) {
      const text = body.toString();
      const message = (() => {
        try {
          return (JSON.parse(text) as { message?: string }).message ?? text;
        } catch {
          return text;
        }
      })();
      throw new EngineError(res.statusCode, `${method} ${path}: ${message.trim() || res.statusCode}`);
    }
    return { body, json: String(res.headers['content-type'] ?? '').includes('json') };
  };
  return {
    host,
    async call<T>(method: Method, path: string, call: CallOptions = {}) {
      const { body, json } = await send(method, path, call);
      // Most answers are JSON; a few are text (`/_ping`'s OK).
      const text = body.toString();
      return (json && text ? JSON.parse(text) : text) as T;
    },
    async frames(path, query, maxBytes) {
      return demux((await send('GET', path, { query }, maxBytes)).body);
    },
    close: () => dispatcher.close(),
  };
}
