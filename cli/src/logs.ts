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
      const abort = () => socket.close(1000);
      signal?.addEventListener('abort', abort, { once: true });
      socket.on('message', (data) => {
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
          if ((res.statusCode ?? 500) >= 500) resolve('dropped');
          else reject(apiError(res.statusCode ?? 500, parsed));
        });
      });
      socket.on('error', (err) => {
        if (lastId === undefined && !signal?.aborted && (err as NodeJS.ErrnoException).code === 'ECONNREFUSED') {
          reject(unreachable(context.url, { cause: err }));
        }
      });
      socket.on('close', (code) => {
        signal?.removeEventListener('abort', abort);
        resolve(code === 1000 ? 'done' : 'dropped');
      });
    }).catch((err: unknown) => {
      if (err instanceof CliError) throw err;
      return 'dropped' as const;
    });
    if (ended === 'done' || signal?.aborted) return;
    await new Promise((resolve) => setTimeout(resolve, backoff));
    backoff = Math.min(backoff * 2, MAX_BACKOFF_MS);
  }
}
