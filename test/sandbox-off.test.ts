import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { finished, packFixture, upload, viaRouter } from './helpers/apps.js';
import { signUp } from './helpers/client.js';
import { bootServer, useServer } from './helpers/server.js';
import { client } from './helpers/client.js';

// Apps run as an unprivileged user only when Slipway is root: then, without bwrap, they open their files on the host.
const IS_ROOT = process.getuid?.() === 0;

describe('without the sandbox (SLIPWAY_SANDBOX=off), as on a machine without bubblewrap', () => {
  const t = useServer({ SLIPWAY_SANDBOX: 'off' });

  it('says once, at start and in /status, that apps are not isolated, and how to install bubblewrap', async () => {
    const { isolation } = (await t.api.get('/status')).body;
    expect(isolation.sandbox).toBe('none');
    const warnings = isolation.notes.filter((n: string) => /not isolated from each other/.test(n));
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toContain('SLIPWAY_SANDBOX=off');
    expect(warnings[0]).toContain('apt-get install bubblewrap');
  });

  it("deploys README's walk-through app: it goes live and answers through the router", async () => {
    const as = await signUp(t.api);
    const created = await t.api.post(
      '/v1/services',
      {
        type: 'web_service',
        name: 'hello',
        serviceDetails: { runtime: 'node', healthCheckPath: '/healthz' },
        envVars: [{ key: 'GREETING', value: 'hi' }],
      },
      as,
    );
    expect(created.status).toBe(201);
    const service = created.body.service;
    const up = await upload(t.api, as, service.id, await packFixture('node-web'));
    expect(up.status).toBe(201);
    const deploy = await finished(t.api, as, service.id, up.body.deployId);
    expect(deploy.failureReason).toBeUndefined();
    expect(deploy.status).toBe('live');
    const reply = await viaRouter(t.server.slipway.routerPort, service.slug);
    expect(reply.status).toBe(200);
    expect(reply.json().env.GREETING).toBe('hi');

    if (!IS_ROOT) return; // apps run as Slipway's own user: nothing of its own is closed to them
    expect(reply.json().uid).not.toBe(0);
    const { dataDir } = t.server;
    const [archive] = readdirSync(path.join(dataDir, 'services', service.id, 'sources')).filter((f) =>
      f.endsWith('.archive'),
    );
    /** What the app gets when it tries to read `file` (node-web's /read endpoint). */
    const read = async (file: string) =>
      (await viaRouter(t.server.slipway.routerPort, service.slug, `/read?${encodeURIComponent(file)}`)).json();
    // Its own code, by its path on the host: readable.
    expect(await read(path.join(dataDir, 'services', service.id, 'artifacts', deploy.id, 'server.js'))).toMatchObject({
      read: true,
    });
    // Slipway's secrets and the uploads: refused.
    for (const file of [
      path.join(dataDir, 'secret.key'),
      // The embedded store's files (on Postgres there are none here).
      ...(t.server.databaseUrl ? [] : [path.join(dataDir, 'pglite', 'PG_VERSION')]),
      path.join(dataDir, 'slipway.lock'),
      path.join(dataDir, 'services', service.id, 'sources', archive!),
    ])
      expect({ file, ...(await read(file)) }).toEqual({ file, read: false, error: 'EACCES' });
  });

  it.runIf(IS_ROOT)('a deploy refused its own files says why in its failureReason, and the fix', async () => {
    const as = await signUp(t.api);
    // The app's command reads a file closed to it, as a node app that cannot load its code would.
    const created = await t.api.post(
      '/v1/services',
      {
        type: 'web_service',
        name: 'refused',
        serviceDetails: { runtime: 'node', envSpecificDetails: { startCommand: `cat ${t.server.dataDir}/secret.key` } },
      },
      as,
    );
    const up = await upload(t.api, as, created.body.service.id, await packFixture('node-web'));
    const deploy = await finished(t.api, as, created.body.service.id, up.body.deployId);
    expect(deploy.status).toBe('update_failed');
    expect(deploy.failureReason).toMatch(
      /Permission denied.*without the bubblewrap sandbox.*apt-get install bubblewrap/,
    );
  });
});

describe.runIf(IS_ROOT)('without the sandbox, under a dir closed to the app user', () => {
  it('says so at start, and a deploy fails naming the dir and the fix', async () => {
    const closed = mkdtempSync(path.join(tmpdir(), 'slipway-closed-')); // 0700, root's
    const server = await bootServer({ SLIPWAY_SANDBOX: 'off' }, { dataDir: path.join(closed, 'data') });
    try {
      const api = client(server.url);
      const { notes } = (await api.get('/status')).body.isolation;
      expect(notes.join('\n')).toContain(`${closed} (mode 0700) is closed to it`);
      const as = await signUp(api);
      const created = await api.post(
        '/v1/services',
        { type: 'web_service', name: 'hello', serviceDetails: { runtime: 'node' } },
        as,
      );
      const up = await upload(api, as, created.body.service.id, await packFixture('node-web'));
      const deploy = await finished(api, as, created.body.service.id, up.body.deployId);
      expect(deploy.status).toBe('update_failed');
      expect(deploy.failureReason).toContain(`the app user nobody cannot reach its files: ${closed} (mode 0700)`);
      expect(deploy.failureReason).toContain('SLIPWAY_DATA_DIR');
      expect(deploy.failureReason).toContain('apt-get install bubblewrap');
    } finally {
      await server.close();
      rmSync(closed, { recursive: true, force: true });
    }
  });
});
