import websocket from '@fastify/websocket';
import type { FastifyInstance } from 'fastify';
import type { Duplex } from 'node:stream';

/**
 * WebSockets (the log tail), and a shutdown that always ends. Subscribers are told (1001 going away) and cut a second
 * later: a client that never answers the close handshake must not hold the stop for ws's 30 s close timeout. An
 * upgrade request's socket is no HTTP connection the server's close would end, so every one still open then is
 * destroyed, and one that arrives during the stop at once: a client that reconnects meanwhile (the CLI's `logs -f`
 * does), or keeps open the socket of a refused upgrade, would otherwise hold the stop for ever.
 */
export async function registerWebSocket(app: FastifyInstance): Promise<void> {
  let stopping = false;
  const upgrades = new Set<Duplex>();
  app.server.on('upgrade', (_req, socket: Duplex) => {
    if (stopping) return void socket.destroy();
    upgrades.add(socket);
    socket.once('close', () => upgrades.delete(socket));
  });
  await app.register(websocket, {
    // No permessage-deflate: the log stream writes its frames itself (observability/logs/frames.ts).
    options: { maxPayload: 64 * 1024, perMessageDeflate: false },
    preClose(done) {
      stopping = true;
      for (const client of app.websocketServer.clients) client.close(1001, 'server shutting down');
      setTimeout(
        () => {
          for (const client of app.websocketServer.clients) client.terminate();
          for (const socket of upgrades) socket.destroy();
          app.websocketServer.close(() => done());
        },
        upgrades.size ? 1000 : 0,
      ).unref();
    },
  });
}
