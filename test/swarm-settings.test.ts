/**
 * Pointing Slipway at a swarm (docs/swarm.md, "Pointing Slipway at a swarm"): the settings it refuses at start, and a
 * manager that does not answer, which `GET /status` reports (down, with why) instead of waiting for it.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../src/app/config.js';
import { useServer } from './helpers/server.js';

describe('swarm settings', () => {
  it('refuses an address that is not a unix socket or tcp, TLS files given in part, and tcp without TLS', () => {
    for (const bad of ['http://10.0.0.1:2375', '/run/docker.sock', 'unix://relative.sock', 'tcp://host:2376/path'])
      expect(() => loadConfig({ SLIPWAY_SWARM_DOCKER_HOST: bad }), bad).toThrow(/SLIPWAY_SWARM_DOCKER_HOST/);
    expect(() =>
      loadConfig({ SLIPWAY_SWARM_DOCKER_HOST: 'unix:///run/docker.sock', SLIPWAY_SWARM_TLS_CA: '/ca.pem' }),
    ).toThrow(/go together/);
    expect(() => loadConfig({ SLIPWAY_SWARM_DOCKER_HOST: 'tcp://10.0.0.1:2376' })).toThrow(/needs SLIPWAY_SWARM_TLS/);
    expect(loadConfig({}).swarm).toBeUndefined();
    expect(loadConfig({ SLIPWAY_SWARM_DOCKER_HOST: 'unix:///run/docker.sock' }).swarm).toEqual({
      dockerHost: 'unix:///run/docker.sock',
      tls: undefined,
      encrypted: true,
    });
    expect(
      loadConfig({ SLIPWAY_SWARM_DOCKER_HOST: 'unix:///run/docker.sock', SLIPWAY_SWARM_ENCRYPTED: '0' }).swarm
        ?.encrypted,
    ).toBe(false);
  });
});

describe('a swarm manager that never answers', () => {
  // A socket that accepts and then says nothing, as a hung dockerd would.
  const dir = mkdtempSync(path.join(tmpdir(), 'slipway-hung-engine-'));
  const socket = path.join(dir, 'docker.sock');
  const sockets = new Set<net.Socket>();
  const hung = net.createServer((s) => sockets.add(s)).listen(socket);
  const t = useServer({ SLIPWAY_SWARM_DOCKER_HOST: `unix://${socket}` });
  afterAll(() => {
    for (const s of sockets) s.destroy();
    hung.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('is down in GET /status, with why, within its 3 s, and is asked once for many requests', async () => {
    const started = performance.now();
    const replies = await Promise.all(
      Array.from({ length: 20 }, () => fetch(`${t.server.url}/status`).then((r) => r.json())),
    );
    expect(performance.now() - started).toBeLessThan(6_000);
    for (const body of replies as Array<{ status: string; components: unknown[]; swarm: { error: string } }>) {
      expect(body.status).toBe('degraded');
      expect(body.components).toContainEqual({ name: 'swarm', status: 'down' });
      expect(body.swarm.error).toMatch(/did not answer within 3000 ms/);
    }
    // One ask of the manager (its two calls, nodes and tasks) for the twenty requests: the answer is shared.
    expect(sockets.size).toBe(2);
  });
});
