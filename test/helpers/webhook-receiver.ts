import http from 'node:http';
import { afterAll } from 'vitest';
import type { AddressInfo } from 'node:net';

export interface Received {
  headers: Record<string, string>;
  body: string;
  json: any;
}

/** A real HTTP receiver on loopback; `respond` decides each answer (default 200), by the request's index. */
export async function startReceiver(
  respond: (req: http.IncomingMessage, res: http.ServerResponse, index: number) => void = (_, res) => res.end('ok'),
) {
  const received: Received[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      received.push({ headers: req.headers as Record<string, string>, body, json: JSON.parse(body || 'null') });
      respond(req, res, received.length - 1);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    port,
    url: `http://127.0.0.1:${port}/hook`,
    received,
    /** The deliveries of one event type. */
    ofType: (type: string) => received.filter((r) => r.json?.type === type),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
export type Receiver = Awaited<ReturnType<typeof startReceiver>>;

/** `startReceiver` for a test file: every receiver it starts is closed after the file's tests. */
export function useReceivers() {
  const receivers: Receiver[] = [];
  afterAll(() => Promise.all(receivers.map((r) => r.close())));
  return async (...args: Parameters<typeof startReceiver>) => {
    const r = await startReceiver(...args);
    receivers.push(r);
    return r;
  };
}
