import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createTrash } from '../src/core/service-state/trash.js';
import { packFixture, upload } from './helpers/apps.js';
import { client, signUp } from './helpers/client.js';
import { waitFor } from './helpers/process.js';
import { bootServer } from './helpers/server.js';

const scratch = mkdtempSync(path.join(tmpdir(), 'slipway-trash-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));
const quietLog = { warn: () => undefined };

/** A tree of `files` small files in `dirs` dirs, as a node_modules is. */
function tree(root: string, files: number, dirs = 100) {
  for (let d = 0; d < dirs; d++) {
    mkdirSync(path.join(root, `pkg-${d}`), { recursive: true });
    for (let f = 0; f < files / dirs; f++) writeFileSync(path.join(root, `pkg-${d}`, `f${f}.js`), 'x');
  }
}

describe('the trash', () => {
  it('takes a big tree away at once and removes it in the background; empty() removes what a crash left', async () => {
    const trashDir = path.join(scratch, 'trash');
    mkdirSync(trashDir);
    tree(path.join(trashDir, 'left-by-a-crash'), 1000);
    const target = path.join(scratch, 'services', 'srv-big');
    tree(target, 20_000);

    const trash = createTrash(trashDir, quietLog);
    const started = performance.now();
    trash.discard(target);
    const tookMs = performance.now() - started;
    expect(existsSync(target)).toBe(false);
    expect(tookMs).toBeLessThan(200); // a rename, not 20,000 unlinks on the event loop
    trash.discard(path.join(scratch, 'no-such-dir')); // nothing to do
    await trash.empty();
    expect(readdirSync(trashDir)).toEqual([]);
  });
});

describe('deleting a service', () => {
  it('answers once its processes stopped, its files go in the background, and a crash leftover at the next start', async () => {
    let server = await bootServer();
    try {
      const api = client(server.url);
      const owner = await signUp(api);
      const created = await api.post(
        '/v1/services',
        { type: 'web_service', name: 'to-delete', serviceDetails: { runtime: 'node' } },
        owner,
      );
      const { service } = created.body;
      expect((await upload(api, owner, service.id, await packFixture('node-web'))).status).toBe(201);
      const serviceDir = path.join(server.dataDir, 'services', service.id);
      tree(path.join(serviceDir, 'artifacts', 'dep-old'), 5000);

      expect((await api.delete(`/v1/services/${service.id}`, owner)).status).toBe(204);
      expect(existsSync(serviceDir)).toBe(false);
      const trashDir = path.join(server.dataDir, 'trash');
      await waitFor('the trash to be emptied', async () => readdirSync(trashDir).length === 0, 30_000);

      // A crash between the rename and the removal: the next start removes what is there.
      await server.stop();
      tree(path.join(trashDir, `${service.id}-left`), 1000);
      server = await bootServer({}, { dataDir: server.dataDir, databaseUrl: server.databaseUrl });
      await waitFor('the leftover to be removed at start', async () => readdirSync(trashDir).length === 0, 30_000);
    } finally {
      await server.close();
    }
  });
});
