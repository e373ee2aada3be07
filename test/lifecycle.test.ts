import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { client, createApiKey, signUp, uniqueEmail } from './helpers/client.js';
import { deadPid, freshStore, postJsonHeld, spawnSlipway, within, type SlipwayProcess } from './helpers/process.js';
import { bootServer, type TestServer } from './helpers/server.js';

const lockFile = (dataDir: string) => path.join(dataDir, 'slipway.lock');
const eventsOf = (reply: { body: Array<{ auditLog: { id: string; event: string } }> }) =>
  reply.body.map((e) => e.auditLog);

describe('restart on the same data dir (and database)', () => {
  it('keeps users, sessions, API keys, idempotent replies and the audit log', async () => {
    const first = await bootServer();
    try {
      let api = client(first.url);
      const user = await signUp(api);
      const created = await api.post(
        '/v1/api-keys',
        { name: 'ci' },
        { cookie: user.cookie, headers: { 'idempotency-key': 'restart-key' } },
      );
      expect(created.status).toBe(201);
      const before = await api.get('/v1/audit-logs', { cookie: user.cookie });
      expect(before.status).toBe(200);
      expect(eventsOf(before).map((e) => e.event)).toEqual(
        expect.arrayContaining(['CreateWorkspaceEvent', 'CreateApiKeyEvent']),
      );

      await first.stop();
      expect(existsSync(lockFile(first.dataDir))).toBe(false);

      const second = await bootServer({}, { dataDir: first.dataDir, databaseUrl: first.databaseUrl });
      try {
        api = client(second.url);
        const login = await api.post('/v1/auth/login', { email: user.email, password: user.password });
        expect(login.status).toBe(200);
        expect(login.body.user.id).toBe(user.id);
        // The session issued before the restart is still valid.
        expect((await api.get('/v1/users', { cookie: user.cookie })).body.id).toBe(user.id);
        // So is the API key.
        const viaKey = await api.get('/v1/users', { token: created.body.token });
        expect(viaKey.status).toBe(200);
        expect(viaKey.body.id).toBe(user.id);
        // The sealed idempotent reply still opens: the secret key persisted in the data dir.
        const replay = await api.post(
          '/v1/api-keys',
          { name: 'ci' },
          { cookie: user.cookie, headers: { 'idempotency-key': 'restart-key' } },
        );
        expect(replay.status).toBe(201);
        expect(replay.headers.get('idempotent-replayed')).toBe('true');
        expect(replay.body).toEqual(created.body);
        // Every earlier audit entry is still there, unchanged, and new ones follow.
        const after = await api.get('/v1/audit-logs', { cookie: user.cookie });
        expect(after.status).toBe(200);
        expect(eventsOf(after)).toEqual(expect.arrayContaining(eventsOf(before)));
        expect(eventsOf(after).map((e) => e.event)).toContain('LoginEvent');
      } finally {
        await second.stop();
      }
    } finally {
      await first.close();
    }
  });
});

describe('one Slipway per data dir', () => {
  let holder: TestServer;
  beforeAll(async () => {
    holder = await bootServer();
  });
  afterAll(() => holder?.close());

  it('a second Slipway process on the same data dir exits 1 with a clear message', async () => {
    const other = spawnSlipway({
      SLIPWAY_DATA_DIR: holder.dataDir,
      SLIPWAY_PORT: '0',
      ...(holder.databaseUrl ? { DATABASE_URL: holder.databaseUrl } : {}),
    });
    try {
      const { code } = await within(other.exited, 20_000, 'second Slipway process');
      expect(code).toBe(1);
      expect(other.stderr()).toContain(
        `slipway: could not start: data dir ${holder.dataDir} is in use by another Slipway process (pid ${process.pid})`,
      );
    } finally {
      await other.kill();
    }
    expect(readFileSync(lockFile(holder.dataDir), 'utf8')).toBe(String(process.pid));
    expect((await client(holder.url).get('/api/health')).status).toBe(200);
  });

  it('a second startSlipway in the same process on the same data dir rejects', async () => {
    const outcome = await bootServer({}, { dataDir: holder.dataDir, databaseUrl: holder.databaseUrl }).then(
      async (server) => {
        await server.stop(); // it should never have started
        return 'started a second Slipway on a locked data dir';
      },
      (err: Error) => err.message,
    );
    expect(outcome).toBe(
      `data dir ${holder.dataDir} is in use by another Slipway process (pid ${process.pid}); stop it or choose another SLIPWAY_DATA_DIR`,
    );
    // The running server keeps its lock and keeps working.
    expect(readFileSync(lockFile(holder.dataDir), 'utf8')).toBe(String(process.pid));
    expect((await client(holder.url).get('/api/health')).status).toBe(200);
  });

  it('takes over a stale lock left by a dead process', async () => {
    const store = await freshStore();
    try {
      writeFileSync(lockFile(store.dataDir), String(await deadPid()));
      const server = await bootServer({}, { dataDir: store.dataDir, databaseUrl: store.databaseUrl });
      try {
        expect(readFileSync(lockFile(store.dataDir), 'utf8')).toBe(String(process.pid));
        expect((await client(server.url).get('/api/health')).status).toBe(200);
      } finally {
        await server.stop();
      }
      expect(existsSync(lockFile(store.dataDir))).toBe(false);
    } finally {
      await store.remove();
    }
  });
});

describe('Slipway as a process', () => {
  const password = 'correct horse battery';
  const registerPattern = /"url":"\/v1\/auth\/register".*"msg":"incoming request"/;
  let store: Awaited<ReturnType<typeof freshStore>>;
  let running: SlipwayProcess[] = [];
  const start = async () => {
    // Both ports 0, the URL read from the process's own "up" line: a port picked beforehand (or the router's
    // default, 8080) may be taken by the time the process binds it, and it would exit while the test polled a port
    // it does not serve. Waiting on its output also fails at once, with its stderr, if it exits.
    const proc = spawnSlipway({ ...store.env, SLIPWAY_PORT: '0', SLIPWAY_ROUTER_PORT: '0' });
    running.push(proc);
    const up = await proc.waitForOutput(/"msg":"slipway is up"/, 30_000);
    return { proc, url: /"url":"([^"]+)"/.exec(up)![1]! };
  };
  const stopGracefully = async (proc: SlipwayProcess) => {
    proc.child.kill('SIGTERM');
    expect(await within(proc.exited, 15_000, 'exit after SIGTERM')).toEqual({ code: 0, signal: null });
  };
  beforeAll(async () => {
    store = await freshStore();
    // Created (initdb, migrations) before the tests, which are about what a process does on an existing store.
    await (await bootServer({}, { dataDir: store.dataDir, databaseUrl: store.databaseUrl })).stop();
  });
  afterEach(async () => {
    for (const proc of running) await proc.kill();
    running = [];
  });
  afterAll(() => store?.remove());

  it('SIGTERM finishes the in-flight request, exits 0 and releases the lock; the next Slipway has the data', async () => {
    const { proc, url } = await start();
    expect(readFileSync(lockFile(store.dataDir), 'utf8')).toBe(String(proc.child.pid));

    const email = uniqueEmail('sigterm');
    // In flight for as long as the test holds back the body's last byte.
    const register = postJsonHeld(`${url}/v1/auth/register`, { email, password, name: 'In Flight' });
    await proc.waitForOutput(registerPattern);
    proc.child.kill('SIGTERM');
    await proc.waitForOutput(/"msg":"shutting down/);
    register.finish();

    const reply = await register.reply;
    expect(reply.status).toBe(201);
    expect(await within(proc.exited, 15_000, 'exit after SIGTERM')).toEqual({ code: 0, signal: null });
    // The signal arrived while the request was in flight, and it was answered after the shutdown began.
    const out = proc.stdout();
    const shutdownAt = out.indexOf('shutting down');
    expect(shutdownAt).toBeGreaterThan(out.search(registerPattern));
    expect(shutdownAt).toBeLessThan(out.search(/"statusCode":201.*"msg":"request completed"/));
    expect(existsSync(lockFile(store.dataDir))).toBe(false);

    // The next Slipway on the data dir (in this process: the spawned one's exit is what is under test) has the user.
    const next = await bootServer({}, { dataDir: store.dataDir, databaseUrl: store.databaseUrl });
    try {
      const login = await client(next.url).post('/v1/auth/login', { email, password });
      expect(login.status).toBe(200);
      expect(login.body.user.id).toBe(reply.body.user.id);
    } finally {
      await next.stop();
    }
  });

  it('SIGTERM does not wait for a keep-alive client to hang up after its in-flight request', async () => {
    const { proc, url } = await start();
    // fetch keeps the connection open after the reply, as browsers, proxies and SDKs do.
    const register = fetch(`${url}/v1/auth/register`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email: uniqueEmail('keepalive'), password, name: 'Keep Alive' }),
      signal: AbortSignal.timeout(15_000),
    });
    await proc.waitForOutput(registerPattern);
    proc.child.kill('SIGTERM');
    const reply = await register;
    expect(reply.status).toBe(201);
    await reply.text();
    expect(await within(proc.exited, 5_000, 'exit after SIGTERM with a keep-alive client connected')).toEqual({
      code: 0,
      signal: null,
    });
  });

  it('SIGTERM does not wait for a WebSocket client that reconnects during the stop', async () => {
    const { proc, url } = await start();
    const owner = await signUp(client(url), { email: uniqueEmail('tail') });
    const { token } = await createApiKey(client(url), owner);
    // A log tail's upgrade, again each time its socket closes (a `logs -f` reconnecting): one accepted during the
    // stop's grace second, after the others were told to go, must not hold the stop for ever.
    const { port } = new URL(url);
    const sockets = new Set<Socket>();
    let reconnecting = true;
    const upgrade = () => {
      const socket = connect(Number(port), '127.0.0.1', () =>
        socket.write(
          `GET /v1/logs/subscribe HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${token}\r\n` +
            'Upgrade: websocket\r\nConnection: Upgrade\r\n' +
            'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n',
        ),
      );
      sockets.add(socket);
      // The server's close frame (1001 going away) is answered by hanging up at once, as ws clients do.
      socket.on('data', (chunk: Buffer) => chunk.includes(0x88) && socket.destroy());
      socket.on('error', () => undefined);
      socket.on('close', () => {
        sockets.delete(socket);
        if (reconnecting) setTimeout(upgrade, 20);
      });
    };
    try {
      for (let i = 0; i < 3; i++) upgrade();
      await new Promise((resolve) => setTimeout(resolve, 300));
      proc.child.kill('SIGTERM');
      expect(await within(proc.exited, 8_000, 'exit after SIGTERM with a client reconnecting')).toEqual({
        code: 0,
        signal: null,
      });
    } finally {
      reconnecting = false;
      for (const socket of sockets) socket.destroy();
    }
  });

  it('comes back after kill -9: the stale lock is taken over and no data is lost', async () => {
    const { proc, url } = await start();
    const user = await signUp(client(url));
    proc.child.kill('SIGKILL');
    await within(proc.exited, 10_000, 'exit after SIGKILL');
    expect(readFileSync(lockFile(store.dataDir), 'utf8')).toBe(String(proc.child.pid)); // left behind

    const next = await start();
    expect(readFileSync(lockFile(store.dataDir), 'utf8')).toBe(String(next.proc.child.pid));
    const login = await client(next.url).post('/v1/auth/login', { email: user.email, password: user.password });
    expect(login.status).toBe(200);
    expect(login.body.user.id).toBe(user.id);
    await stopGracefully(next.proc);
  });
});
