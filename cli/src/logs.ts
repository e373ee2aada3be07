import { apiError, authHeaders, baseUrl, unreachable } from './api.js';
import type { Context } from './contexts.js';
import { CliError } from './errors.js';

export interface LogEntry {
  id: string;
  message: string;
  timestamp: string;
  labels: Array<{ name: string; value: string }>;
}

export const label = (entry: LogEntry, name: string) => entry.labels.find((l) => l.name === name)?.value;

const MAX_BACKOFF_MS = 5000;
/** Silence after which a connection is taken for dead: two of Slipway's 30 s pings missed, and some. */
const SILENCE_MS = 75_000;

/**
 * Follows /v1/logs/subscribe until `signal` aborts or the server ends the stream (1000: endTime reached). A dropped
 * connection (Slipway restarting, 4008 too slow, the network) is reopened after the last entry received (`afterId`),
 * so nothing is missed or repeated; an error answer to the upgrade (401, 404, 400) ends it with the API's message.
 */
export async function followLogs(
  context: Context,
  query: URLSearchParams,
  onEntry: (entry: LogEntry) => void,
  signal?: AbortSignal,
): Promise<void> {
  const { default: WebSocket } = await import('ws'); // when needed: start-up stays short (docs/cli.md)
  let lastId: string | undefined;
  let connected = false;
  let backoff = 250;
  while (!signal?.aborted) {
    const params = new URLSearchParams(query);
    if (lastId) {
      params.delete('startTime');
      params.set('afterId', lastId);
    }
    const url = `${baseUrl(context).replace(/^http/, 'ws')}/v1/logs/subscribe?${params}`;
    const ended = await new Promise<'done' | 'dropped'>((resolve, reject) => {
      const socket = new WebSocket(url, { headers: authHeaders(context) });
      // Slipway pings every 30 s: a connection silent for longer is half-open (a laptop slept, a NAT forgot it).
      let watchdog: NodeJS.Timeout | undefined;
      const heard = () => {
        clearTimeout(watchdog);
        watchdog = setTimeout(() => socket.terminate(), SILENCE_MS);
      };
      const abort = () => socket.close(1000);
      signal?.addEventListener('abort', abort, { once: true });
      const settle = (outcome: 'done' | 'dropped' | CliError) => {
        clearTimeout(watchdog);
        signal?.removeEventListener('abort', abort);
        if (outcome instanceof CliError) reject(outcome);
        else resolve(outcome);
      };
      socket.on('open', () => {
        connected = true;
        heard();
      });
      socket.on('ping', heard);
      socket.on('message', (data) => {
        heard();
        backoff = 250;
        const entry = JSON.parse(String(data)) as LogEntry;
        lastId = entry.id;
        onEntry(entry);
      });
      socket.on('unexpected-response', (req, res) => {
        let body = '';
        res.on('data', (chunk: Buffer) => (body += chunk));
        res.on('end', () => {
          req.destroy(); // ws leaves a refused upgrade's connection to this listener: it would stay open
          let parsed: unknown;
          try {
            parsed = JSON.parse(body);
          } catch {
            parsed = undefined;
          }
          // 5xx and 503 while Slipway restarts are worth another try; a refusal is not.
          settle((res.statusCode ?? 500) >= 500 ? 'dropped' : apiError(res.statusCode ?? 500, parsed));
        });
      });
      socket.on('error', (err) => {
        // Refused before it ever connected: a wrong URL, not a restart (which is waited out).
        if (!connected && !signal?.aborted && (err as NodeJS.ErrnoException).code === 'ECONNREFUSED') {
          settle(unreachable(context.url, { cause: err }));
        }
      });
      socket.on('close', (code) => settle(code === 1000 ? 'done' : 'dropped'));
    }).catch((err: unknown) => {
      if (err instanceof CliError) throw err;
      return 'dropped' as const;
    });
    if (ended === 'done' || signal?.aborted) return;
    await new Promise((resolve) => setTimeout(resolve, backoff));
    backoff = Math.min(backoff * 2, MAX_BACKOFF_MS);
  }
}
