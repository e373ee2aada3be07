/**
 * Render's secret files (docs/deploys.md, "Secret files"): a service's own and its env groups', with Render's paths,
 * bodies and statuses; sealed at rest; mounted at /etc/secrets/<name> in a real deployed app.
 */
import { readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { Ajv } from 'ajv';
import { describe, expect, it } from 'vitest';
import { finished, packFixture, upload, viaRouter } from './helpers/apps.js';
import { addMember, signUp, type TestUser } from './helpers/client.js';
import { loadRenderReference } from './helpers/render-reference.js';
import { useServer } from './helpers/server.js';
import { waitFor } from './helpers/wait.js';

const t = useServer();
const ajv = new Ajv({ strict: false, allErrors: true });
ajv.addSchema(loadRenderReference(), 'render');
const renderSchema = (name: string) => ajv.getSchema(`render#/components/schemas/${name}`)!;
const conforms = (name: string, body: unknown) => {
  const validate = renderSchema(name);
  expect(validate(body), JSON.stringify(validate.errors)).toBe(true);
};

async function newService(
  as: TestUser,
  name = `sf-${Math.random().toString(36).slice(2, 8)}`,
  details: Record<string, unknown> = {},
) {
  const created = await t.api.post(
    '/v1/services',
    { type: 'web_service', name, serviceDetails: { runtime: 'node', ...details } },
    as,
  );
  expect(created.status, created.text).toBe(201);
  return created.body.service as { id: string; slug: string };
}

describe('secret files', () => {
  it("serves a service's secret files with Render's bodies: list (cursor-wrapped, paged), replace, get, put, delete", async () => {
    const owner = await signUp(t.api);
    const service = await newService(owner);
    const base = `/v1/services/${service.id}/secret-files`;
    expect((await t.api.get(base, owner)).body).toEqual([]);

    const replaced = await t.api.put(
      base,
      [
        { name: 'b.pem', content: '-----BEGIN KEY-----\nbbb\n' },
        { name: '.env', content: 'A=1\n' },
      ],
      owner,
    );
    expect(replaced.status, replaced.text).toBe(200);
    expect(replaced.body.map((i: any) => i.secretFile.name)).toEqual(['.env', 'b.pem']);
    for (const item of replaced.body) conforms('secretFileWithCursor', item);

    const page = await t.api.get(`${base}?limit=1`, owner);
    expect(page.body).toEqual([{ secretFile: { name: '.env', content: 'A=1\n' }, cursor: expect.any(String) }]);
    const next = await t.api.get(`${base}?limit=1&cursor=${page.body[0].cursor}`, owner);
    expect(next.body.map((i: any) => i.secretFile.name)).toEqual(['b.pem']);

    const put = await t.api.put(`${base}/config.json`, { content: '{"k":"v"}' }, owner);
    expect(put.status, put.text).toBe(201);
    expect(put.body).toEqual({ name: 'config.json', content: '{"k":"v"}' });
    conforms('secretFile', put.body);
    expect((await t.api.put(`${base}/config.json`, { content: '{"k":"w"}' }, owner)).status).toBe(201);
    expect((await t.api.get(`${base}/config.json`, owner)).body).toEqual({ name: 'config.json', content: '{"k":"w"}' });

    expect((await t.api.delete(`${base}/b.pem`, owner)).status).toBe(204);
    expect((await t.api.delete(`${base}/b.pem`, owner)).status).toBe(404);
    expect((await t.api.get(`${base}/b.pem`, owner)).status).toBe(404);
    expect((await t.api.get(base, owner)).body.map((i: any) => i.secretFile.name)).toEqual(['.env', 'config.json']);
    // PUT of the whole set removes the files it leaves out.
    await t.api.put(base, [{ name: 'only.txt', content: 'x' }], owner);
    expect((await t.api.get(base, owner)).body.map((i: any) => i.secretFile.name)).toEqual(['only.txt']);

    // Sealed at rest with the env vars' secret box; audited without contents.
    const { rows } = await t.server.slipway.store.executeSql(
      'select name, sealed_content from secret_files where service_id = $1',
      [service.id],
    );
    expect(rows).toEqual([{ name: 'only.txt', sealed_content: expect.stringMatching(/^v1:/) }]);
    await t.api.put(`${base}/plain.txt`, { content: 'plaintext-canary-4711' }, owner);
    const all = await t.server.slipway.store.executeSql('select * from secret_files where service_id = $1', [
      service.id,
    ]);
    expect(JSON.stringify(all.rows)).not.toContain('plaintext-canary-4711');
    const audit = await t.api.get('/v1/audit-logs?limit=20', owner);
    const events = audit.body.map((i: any) => i.auditLog.event);
    expect(events).toEqual(expect.arrayContaining(['UpdateSecretFilesEvent', 'DeleteSecretFilesEvent']));
    expect(audit.text).not.toContain('plaintext-canary-4711');
  });

  it('refuses bad names and sizes with a 4xx in the error shape, and answers 404 for another workspace', async () => {
    const owner = await signUp(t.api);
    const service = await newService(owner);
    const base = `/v1/services/${service.id}/secret-files`;
    const refused = async (res: { status: number; body: any }, status = 400) => {
      expect(res.status, JSON.stringify(res.body)).toBe(status);
      expect(res.body).toMatchObject({ id: expect.any(String), code: expect.any(String), message: expect.any(String) });
    };
    // ('..' itself in a URL is resolved away by every client: it is checked in a body below.)
    for (const name of ['a%2Fb', '..%2F..%2Fetc%2Fpasswd', 'has%20space', 'x'.repeat(256), 'caf%C3%A9'])
      await refused(await t.api.put(`${base}/${name}`, { content: 'x' }, owner));
    await refused(await t.api.put(`${base}/nul%00`, { content: 'x' }, owner));
    await refused(await t.api.put(`${base}/big`, { content: 'x'.repeat(1024 * 1024 + 1) }, owner));
    await refused(await t.api.put(`${base}/multibyte`, { content: 'é'.repeat(600 * 1024) }, owner)); // 1.2 MB of UTF-8
    await refused(await t.api.put(`${base}/n`, { content: 1 }, owner));
    await refused(await t.api.put(`${base}/n`, {}, owner));
    await refused(
      await t.api.put(
        base,
        [
          { name: 'same', content: 'a' },
          { name: 'same', content: 'b' },
        ],
        owner,
      ),
    );
    for (const name of ['a/b', '..', '.', '', 'x\\y'])
      await refused(await t.api.put(base, [{ name, content: 'a' }], owner));
    await refused(
      await t.api.put(
        base,
        Array.from({ length: 51 }, (_, i) => ({ name: `f${i}`, content: 'x' })),
        owner,
      ),
    );
    // Five files of 1 MB each are each within bounds, but over the total of 4 MiB.
    for (let i = 0; i < 4; i++)
      expect((await t.api.put(`${base}/part${i}`, { content: 'y'.repeat(1000 * 1000) }, owner)).status).toBe(201);
    await refused(await t.api.put(`${base}/part4`, { content: 'y'.repeat(1000 * 1000) }, owner));
    await refused(await t.api.put(`${base}/mask`, { content: '********' }, owner));
    expect((await t.api.get(base, owner)).body).toHaveLength(4);

    const other = await signUp(t.api);
    await refused(await t.api.get(base, other), 404);
    await refused(await t.api.get(`${base}/part0`, other), 404);
    await refused(await t.api.put(`${base}/part0`, { content: 'mine now' }, other), 404);
    await refused(await t.api.put(base, [], other), 404);
    await refused(await t.api.delete(`${base}/part0`, other), 404);
    await refused(await t.api.get('/v1/services/srv-00000000000000000000/secret-files', owner), 404);
    const viewer = await addMember(t.api, owner, 'viewer');
    await refused(await t.api.get(base, viewer), 403);
    expect((await t.api.get(`${base}/part0`, owner)).body.content).toHaveLength(1000 * 1000);
  });

  it("keeps an env group's secret files in its body, masked below admin as its values are", async () => {
    const owner = await signUp(t.api);
    const developer = await addMember(t.api, owner, 'developer');
    const group = (await t.api.post('/v1/env-groups', { name: 'files', envVars: [] }, owner)).body;
    const base = `/v1/env-groups/${group.id}/secret-files`;
    const put = await t.api.put(`${base}/tls.key`, { content: 'group-key' }, owner);
    expect(put.status, put.text).toBe(200);
    expect(put.body.secretFiles).toEqual([{ name: 'tls.key', content: 'group-key' }]);
    conforms('envGroup', put.body);
    expect((await t.api.get(`${base}/tls.key`, owner)).body).toEqual({ name: 'tls.key', content: 'group-key' });
    expect((await t.api.get(`/v1/env-groups/${group.id}`, owner)).body.secretFiles).toEqual([
      { name: 'tls.key', content: 'group-key' },
    ]);
    // A developer reads the names, not the contents, and cannot write the mask back.
    expect((await t.api.get(`${base}/tls.key`, developer)).body).toEqual({ name: 'tls.key', content: '********' });
    expect((await t.api.get(`/v1/env-groups/${group.id}`, developer)).text).not.toContain('group-key');
    expect((await t.api.put(`${base}/tls.key`, { content: '********' }, developer)).status).toBe(400);
    expect((await t.api.put(`${base}/a%2Fb`, { content: 'x' }, owner)).status).toBe(400);

    const other = await signUp(t.api);
    expect((await t.api.get(`${base}/tls.key`, other)).status).toBe(404);
    expect((await t.api.put(`${base}/tls.key`, { content: 'x' }, other)).status).toBe(404);
    expect((await t.api.delete(`${base}/tls.key`, other)).status).toBe(404);

    const { rows } = await t.server.slipway.store.executeSql(
      'select sealed_content from env_group_secret_files where group_id = $1',
      [group.id],
    );
    expect(rows[0].sealed_content).toMatch(/^v1:/);
    expect(rows[0].sealed_content).not.toContain('group-key');
    expect((await t.api.delete(`${base}/tls.key`, owner)).status).toBe(204);
    expect((await t.api.delete(`${base}/tls.key`, owner)).status).toBe(404);
    expect((await t.api.get(`/v1/env-groups/${group.id}`, owner)).body.secretFiles).toEqual([]);
  });

  it('mounts them read-only at /etc/secrets in a deployed app: its own over its groups, gone after a restart', async () => {
    const owner = await signUp(t.api);
    const service = await newService(owner);
    const group = (
      await t.api.post('/v1/env-groups', { name: 'app-files', envVars: [], serviceIds: [service.id] }, owner)
    ).body;
    await t.api.put(`/v1/env-groups/${group.id}/secret-files/shared.txt`, { content: 'from the group' }, owner);
    await t.api.put(`/v1/env-groups/${group.id}/secret-files/config.json`, { content: 'group config' }, owner);
    await t.api.put(`/v1/services/${service.id}/secret-files/config.json`, { content: '{"db":"s3cret"}' }, owner);
    const up = await upload(t.api, owner, service.id, await packFixture('node-web'));
    const live = await finished(t.api, owner, service.id, up.body.deployId);
    expect(live.status, live.failureReason).toBe('live');

    const port = t.server.slipway.routerPort;
    const read = async (file: string) =>
      JSON.parse((await viaRouter(port, service.slug, `/read?/etc/secrets/${file}`)).text);
    expect(await read('config.json')).toEqual({ read: true, content: '{"db":"s3cret"}' });
    expect(await read('shared.txt')).toEqual({ read: true, content: 'from the group' });
    // And in the app's root dir, as Render puts them (bound over an empty placeholder in the read-only artifact).
    const inRoot = async (file: string) => JSON.parse((await viaRouter(port, service.slug, `/read?${file}`)).text);
    expect(await inRoot('config.json')).toEqual({ read: true, content: '{"db":"s3cret"}' });
    expect(await inRoot('shared.txt')).toEqual({ read: true, content: 'from the group' });

    // On the host: a dir of the instance's, 0700, with 0400 files.
    const instances = path.join(t.server.dataDir, 'services', service.id, 'instances');
    const [instance] = readdirSync(instances).filter((d) =>
      statSync(path.join(instances, d, 'secrets'), { throwIfNoEntry: false }),
    );
    const dir = path.join(instances, instance!, 'secrets');
    expect(statSync(dir).mode & 0o777).toBe(0o700);
    expect(statSync(path.join(dir, 'config.json')).mode & 0o777).toBe(0o400);

    // A change applies from the next start (Render: the next deploy); a restart drops the removed file.
    expect((await t.api.delete(`/v1/env-groups/${group.id}/secret-files/shared.txt`, owner)).status).toBe(204);
    expect(await read('shared.txt')).toEqual({ read: true, content: 'from the group' });
    expect((await t.api.post(`/v1/services/${service.id}/restart`, undefined, owner)).status).toBe(200);
    await waitFor('the restarted instance without shared.txt', async () => (await read('shared.txt')).read === false);
    expect(await read('shared.txt')).toEqual({ read: false, error: 'ENOENT' });
    expect(await read('config.json')).toEqual({ read: true, content: '{"db":"s3cret"}' });
    // In the root dir, the removed file's placeholder stays empty until the next build's artifact.
    expect(await inRoot('shared.txt')).toEqual({ read: true, content: '' });
    expect(await inRoot('config.json')).toEqual({ read: true, content: '{"db":"s3cret"}' });
  }, 120_000);

  it('gives them to the build command and the pre-deploy command too, at /etc/secrets', async () => {
    const owner = await signUp(t.api);
    const service = await newService(owner, undefined, {
      // node-web answers with its VERSION file: the build writes it from a secret file.
      envSpecificDetails: { buildCommand: 'cp /etc/secrets/version.txt VERSION' },
      preDeployCommand: 'test "$(cat /etc/secrets/version.txt)" = from-a-secret-file',
    });
    await t.api.put(`/v1/services/${service.id}/secret-files/version.txt`, { content: 'from-a-secret-file' }, owner);
    const up = await upload(t.api, owner, service.id, await packFixture('node-web'));
    const live = await finished(t.api, owner, service.id, up.body.deployId);
    expect(live.status, live.failureReason).toBe('live');
    const served = JSON.parse((await viaRouter(t.server.slipway.routerPort, service.slug)).text) as { version: string };
    expect(served.version).toBe('from-a-secret-file');

    // Without the file, the pre-deploy command fails (the build's copy fails first: the same mount).
    await t.api.delete(`/v1/services/${service.id}/secret-files/version.txt`, owner);
    const again = await upload(t.api, owner, service.id, await packFixture('node-web'));
    const failed = await finished(t.api, owner, service.id, again.body.deployId);
    expect(failed.status).toBe('build_failed');
    expect(failed.failureReason).toMatch(/version\.txt/);
  }, 120_000);
});
