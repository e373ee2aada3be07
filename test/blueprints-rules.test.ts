/**
 * Blueprint sync rules: immutable fields, `sync: false` values, one sync at a time, git sources, hostile and broken
 * files, and another workspace's blueprints.
 */
import { execFileSync } from 'node:child_process';
import { chmodSync, cpSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { FIXTURES, viaRouter } from './helpers/apps.js';
import {
  allDeploysSettled,
  createUploaded,
  multipart,
  packBlueprint,
  servicesByName,
  syncEnded,
} from './helpers/blueprints.js';
import { addMember, signUp } from './helpers/client.js';
import { useServer } from './helpers/server.js';

const t = useServer({ SLIPWAY_GIT_ALLOW_LOCAL: '1' });
const scratch = mkdtempSync(path.join(tmpdir(), 'slipway-bp-'));
chmodSync(scratch, 0o755); // git runs as the builds' user, which must read a local repo (docs/deploys.md, "Git")
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

const WEB = (secret = true) => `
services:
  - type: web
    name: api
    runtime: node
    startCommand: node server.js
    healthCheckPath: /healthz
    envVars:
      - key: GREETING
        value: hi
${secret ? '      - key: API_KEY\n        sync: false' : ''}
  - type: pserv
    name: internal
    runtime: node
    startCommand: node server.js
`;

describe('blueprint sync rules', () => {
  it('asks for "sync: false" values on the first sync, naming the key; the next sync with them completes', async () => {
    const owner = await signUp(t.api);
    const created = await createUploaded(t.api, owner, 'secrets', WEB());
    const bp = created.body.blueprint;
    const first = await syncEnded(t.api, owner, bp.id, created.body.sync.id);
    expect(first.state).toBe('error');
    const api = first.resources.find((r: any) => r.name === 'api');
    expect(api).toMatchObject({ action: 'failed' });
    expect(api.error).toContain('API_KEY');
    expect(first.resources.find((r: any) => r.name === 'internal')).toMatchObject({ action: 'created' });
    expect((await t.api.get(`/v1/blueprints/${bp.id}`, owner)).body.status).toBe('error');

    // Partial failure keeps what was made tracked; the next sync carries on from there.
    const next = await t.api.post(`/v1/blueprints/${bp.id}/sync`, { envVars: { API_KEY: 'k-123' } }, owner);
    expect(next.status).toBe(202);
    const second = await syncEnded(t.api, owner, bp.id, next.body.id);
    expect(second.state).toBe('success');
    expect(second.resources.find((r: any) => r.name === 'api')).toMatchObject({ action: 'updated' });
    expect(second.resources.find((r: any) => r.name === 'internal')).toMatchObject({ action: 'unchanged' });
    await allDeploysSettled(t.api, owner);
    const services = await servicesByName(t.api, owner);
    const web = (await viaRouter(t.server.slipway.routerPort, services.get('api').slug, '/')).json();
    expect(web).toMatchObject({ GREETING: 'hi', API_KEY: 'k-123' });
    // The value is never in the sync record.
    const syncs = await t.api.get(`/v1/blueprints/${bp.id}/syncs`, owner);
    expect(syncs.text).not.toContain('k-123');
  });

  it('an immutable field that changed fails that resource only; the others sync', async () => {
    const owner = await signUp(t.api);
    const created = await createUploaded(t.api, owner, 'immutable', WEB(false));
    const bp = created.body.blueprint;
    expect((await syncEnded(t.api, owner, bp.id, created.body.sync.id)).state).toBe('success');
    const body = await multipart(
      {},
      await packBlueprint(WEB(false).replace('type: pserv', 'type: worker').replace('value: hi', 'value: hey')),
    );
    const up = await t.api.call('POST', `/v1/blueprints/${bp.id}/upload`, { ...owner, ...body });
    expect(up.status).toBe(200);
    const sync = await syncEnded(t.api, owner, bp.id, up.body.sync.id);
    expect(sync.state).toBe('error');
    const internal = sync.resources.find((r: any) => r.name === 'internal');
    expect(internal).toMatchObject({ action: 'failed' });
    expect(internal.error).toMatch(/type cannot change/);
    expect(sync.error).toContain('internal');
    expect(sync.resources.find((r: any) => r.name === 'api')).toMatchObject({ action: 'updated' });
    expect((await servicesByName(t.api, owner)).get('internal').type).toBe('private_service');
  });

  it('runs one sync of a blueprint at a time: another asked meanwhile is a 409', async () => {
    const owner = await signUp(t.api);
    const created = await createUploaded(t.api, owner, 'busy', WEB(false));
    const bp = created.body.blueprint;
    const [a, b] = await Promise.all([
      t.api.post(`/v1/blueprints/${bp.id}/sync`, {}, owner),
      t.api.post(`/v1/blueprints/${bp.id}/sync`, {}, owner),
    ]);
    expect([a.status, b.status]).toEqual([409, 409]); // the first sync (from creation) still runs
    expect(a.body).toMatchObject({ code: 'conflict' });
    await syncEnded(t.api, owner, bp.id, created.body.sync.id);
    const later = await t.api.post(`/v1/blueprints/${bp.id}/sync`, {}, owner);
    expect(later.status).toBe(202);
    await syncEnded(t.api, owner, bp.id, later.body.id);
  });

  it('reads the file at the head of a git branch; every service without a repo builds from that repo', async () => {
    const repo = path.join(scratch, 'repo');
    cpSync(path.join(FIXTURES, 'blueprint-app'), repo, { recursive: true });
    writeFileSync(path.join(repo, 'deploy.yaml'), WEB(false));
    const git = (...args: string[]) =>
      execFileSync('git', ['-C', repo, '-c', 'user.name=t', '-c', 'user.email=t@example.com', ...args]);
    git('init', '--quiet', '--initial-branch=main');
    git('add', '.');
    git('commit', '--quiet', '-m', 'blueprint');
    const head = execFileSync('git', ['-C', repo, 'rev-parse', 'HEAD'], { encoding: 'utf8' }).trim();
    const owner = await signUp(t.api);
    const created = await t.api.post(
      '/v1/blueprints',
      { name: 'from-git', repo: `file://${repo}`, branch: 'main', path: 'deploy.yaml', autoSync: false },
      owner,
    );
    expect(created.status).toBe(201);
    expect(created.body.blueprint).toMatchObject({
      repo: `file://${repo}`,
      branch: 'main',
      path: 'deploy.yaml',
      autoSync: false,
    });
    const sync = await syncEnded(t.api, owner, created.body.blueprint.id, created.body.sync.id);
    expect(sync).toMatchObject({ state: 'success', commit: { id: head } });
    const deploys = await allDeploysSettled(t.api, owner);
    expect(deploys.map((d) => d.status)).toEqual(['live', 'live']);
    expect(deploys.every((d) => d.commit?.id === head)).toBe(true);
    const services = await servicesByName(t.api, owner);
    expect(services.get('api')).toMatchObject({ repo: `file://${repo}`, branch: 'main' });
  });

  it('fails a sync with a reason for a broken file, a missing one, or one that points outside the archive', async () => {
    const owner = await signUp(t.api);
    const broken = await createUploaded(t.api, owner, 'broken', 'services:\n  - type: web\n    name: [unclosed\n');
    const sync = await syncEnded(t.api, owner, broken.body.blueprint.id, broken.body.sync.id);
    expect(sync.state).toBe('error');
    expect(sync.error).toMatch(/not a valid Blueprint.*line \d+/);

    const invalid = await createUploaded(
      t.api,
      owner,
      'invalid',
      'services:\n  - type: web\n    name: x\n    runtime: cobol\n',
    );
    const why = (await syncEnded(t.api, owner, invalid.body.blueprint.id, invalid.body.sync.id)).error;
    expect(why).toMatch(/services\[0\]\.runtime \(line 4\)/);

    // A link to a file outside the source: an archive holding one is refused at upload; a repo may hold one, and
    // the sync refuses to follow it.
    const secret = path.join(scratch, 'secret.yaml');
    writeFileSync(secret, 'services: []\n');
    const dir = path.join(scratch, 'evil');
    cpSync(path.join(FIXTURES, 'blueprint-app'), dir, { recursive: true });
    symlinkSync(secret, path.join(dir, 'render.yaml'));
    const tar = path.join(scratch, 'evil.tgz');
    execFileSync('tar', ['-czf', tar, '-C', dir, '.']);
    const body = await multipart({ name: 'evil' }, new Uint8Array(readFileSync(tar)));
    const evil = await t.api.call('POST', '/v1/blueprints', { ...owner, ...body });
    expect(evil.status).toBe(400);
    expect(evil.body.message).toMatch(/symlink/);
    const git = (...args: string[]) =>
      execFileSync('git', ['-C', dir, '-c', 'user.name=t', '-c', 'user.email=t@example.com', ...args]);
    git('init', '--quiet', '--initial-branch=main');
    git('add', '.');
    git('commit', '--quiet', '-m', 'evil');
    const fromGit = await t.api.post('/v1/blueprints', { name: 'evil-git', repo: `file://${dir}` }, owner);
    expect(fromGit.status).toBe(201);
    const ended = await syncEnded(t.api, owner, fromGit.body.blueprint.id, fromGit.body.sync.id);
    expect(ended).toMatchObject({ state: 'error', error: 'render.yaml points outside the source' });

    // A header rule that would frame the response (and desynchronise the client's connection) fails its site.
    const framing = await createUploaded(
      t.api,
      owner,
      'framing',
      'services:\n  - type: web\n    name: site\n    runtime: static\n    staticPublishPath: public\n    headers:\n      - path: /*\n        name: Transfer-Encoding\n        value: chunked\n',
    );
    const framed = await syncEnded(t.api, owner, framing.body.blueprint.id, framing.body.sync.id);
    expect(framed.resources[0]).toMatchObject({ name: 'site', action: 'failed' });
    expect(framed.resources[0].error).toMatch(/headers\[0\]\.name/);

    // One request may not make thousands of resources: over the cap, nothing is made.
    const groups = Array.from({ length: 201 }, (_, i) => `  - name: g${i}\n`).join('');
    const huge = await createUploaded(t.api, owner, 'huge', `envVarGroups:\n${groups}`);
    const refused = await syncEnded(t.api, owner, huge.body.blueprint.id, huge.body.sync.id);
    expect(refused).toMatchObject({ state: 'error', resources: [] });
    expect(refused.error).toMatch(/201 resources; one blueprint manages at most 200/);
    expect((await t.api.get('/v1/env-groups', owner)).body).toEqual([]);

    const noFile = await createUploaded(t.api, owner, 'no-file', 'x: 1');
    await syncEnded(t.api, owner, noFile.body.blueprint.id, noFile.body.sync.id);
    const moved = await t.api.patch(`/v1/blueprints/${noFile.body.blueprint.id}`, { path: 'nope/render.yaml' }, owner);
    expect(moved.status).toBe(200);
    const again = await t.api.post(`/v1/blueprints/${noFile.body.blueprint.id}/sync`, {}, owner);
    expect((await syncEnded(t.api, owner, noFile.body.blueprint.id, again.body.id)).error).toMatch(/was not found/);
  });

  it('refuses bad input with a 4xx in the error shape', async () => {
    const owner = await signUp(t.api);
    const cases: Array<[unknown, number]> = [
      [{ name: 'x' }, 400], // neither repo nor archive
      [{ name: 'x', repo: 'file:///etc', path: '../../etc/passwd' }, 400],
      [{ name: 'x', repo: '--upload-pack=evil' }, 400],
      [{ name: 5, repo: 'https://example.com/r.git' }, 400],
      [{ name: 'x', repo: 'https://example.com/r.git', autoSync: 'maybe' }, 400],
    ];
    for (const [body, status] of cases) {
      const res = await t.api.post('/v1/blueprints', body, owner);
      expect(res.status, JSON.stringify(body)).toBe(status);
      expect(res.body).toMatchObject({ code: expect.any(String), message: expect.any(String) });
    }
    const malformed = await t.api.call('POST', '/v1/blueprints', {
      ...owner,
      raw: '{"name": ',
      headers: { 'content-type': 'application/json' },
    });
    expect(malformed.status).toBe(400);
    const notArchive = await multipart({ name: 'junk' }, new TextEncoder().encode('not an archive'));
    expect((await t.api.call('POST', '/v1/blueprints', { ...owner, ...notArchive })).status).toBe(400);
    expect((await t.api.get('/v1/blueprints', owner)).body).toEqual([]); // nothing half-made
  });

  it("hides another workspace's blueprint (404), and lets only developers and up change one", async () => {
    const owner = await signUp(t.api);
    const created = await createUploaded(t.api, owner, 'mine', WEB(false));
    const bp = created.body.blueprint;
    await syncEnded(t.api, owner, bp.id, created.body.sync.id);
    const other = await signUp(t.api);
    for (const [method, url] of [
      ['GET', `/v1/blueprints/${bp.id}`],
      ['GET', `/v1/blueprints/${bp.id}/syncs`],
      ['PATCH', `/v1/blueprints/${bp.id}`],
      ['POST', `/v1/blueprints/${bp.id}/sync`],
      ['DELETE', `/v1/blueprints/${bp.id}`],
    ] as const) {
      const res = await t.api.call(method, url, {
        ...other,
        body: method === 'GET' || method === 'DELETE' ? undefined : {},
      });
      expect(res.status, `${method} ${url}`).toBe(404);
    }
    expect((await t.api.get('/v1/blueprints', other)).body).toEqual([]);
    expect((await t.api.get(`/v1/blueprints?ownerId=${owner.workspaceId}`, other)).status).toBe(404);
    // A viewer of the workspace reads, and changes nothing.
    const viewer = await addMember(t.api, owner, 'viewer');
    expect((await t.api.get(`/v1/blueprints/${bp.id}`, viewer)).status).toBe(200);
    expect((await t.api.post(`/v1/blueprints/${bp.id}/sync`, {}, viewer)).status).toBe(403);
    expect((await t.api.patch(`/v1/blueprints/${bp.id}`, { autoSync: false }, viewer)).status).toBe(403);
    expect((await t.api.delete(`/v1/blueprints/${bp.id}`, viewer)).status).toBe(403);

    // A sync needs no body at all (curl -X POST), as Render's POST routes take it.
    const bare = await t.api.call('POST', `/v1/blueprints/${bp.id}/sync`, owner);
    expect(bare.status).toBe(202);
    expect((await syncEnded(t.api, owner, bp.id, bare.body.id)).state).toBe('success');

    // Rename and pause autoSync; then disconnect: the resources stay.
    const patched = await t.api.patch(`/v1/blueprints/${bp.id}`, { name: 'renamed', autoSync: false }, owner);
    expect(patched.body).toMatchObject({ name: 'renamed', autoSync: false });
    expect((await t.api.delete(`/v1/blueprints/${bp.id}`, owner)).status).toBe(204);
    expect((await t.api.get(`/v1/blueprints/${bp.id}`, owner)).status).toBe(404);
    expect([...(await servicesByName(t.api, owner)).keys()].sort()).toEqual(['api', 'internal']);
    const audit = await t.api.get('/v1/audit-logs?limit=50', owner);
    const events = audit.body.map((i: any) => i.auditLog.event);
    expect(events).toEqual(
      expect.arrayContaining(['CreateBlueprintEvent', 'BlueprintSyncEndedEvent', 'DeleteBlueprintEvent']),
    );
  });
});
