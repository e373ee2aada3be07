/**
 * render.yaml as real files write it: YAML aliases and merge keys, fields Render knows and Slipway does not (warnings
 * at their line, not errors), and the multipart form's text fields read as the types the route declares.
 */
import { describe, expect, it } from 'vitest';
import { multipart, packBlueprint, syncEnded, validateFile } from './helpers/blueprints.js';
import { signUp, type TestUser } from './helpers/client.js';
import { useServer } from './helpers/server.js';

const t = useServer();

const validate = (user: TestUser, text: string) => validateFile(t.server.url, user, text);

const SERVICES = `services:
  - &web
    type: web
    name: api
    runtime: node
    startCommand: node server.js
    rootdir: api
  - <<: *web
    name: api-2
envVarGroups:
  - name: shared
    envVars: &vars
      - key: A
        value: "1"
  - name: copy
    envVars: *vars
`;

/** Env groups only: a sync builds nothing. */
const GROUPS = `envVarGroups:
  - name: base
    envVars: &common
      - key: LOG_LEVEL
        value: info
      - key: REGION
        value: eu
  - name: copy
    envVars: *common
  - &tmpl
    name: templated
    envVars:
      - key: FROM_TEMPLATE
        value: "yes"
  - <<: *tmpl
    name: merged
`;

describe('blueprints: YAML as real files write it', () => {
  it('reads aliases and merge keys; unknown fields are warnings at their line, with the field meant', async () => {
    const owner = await signUp(t.api);
    const { status, body } = await validate(owner, SERVICES);
    expect(status).toBe(200);
    expect(body.errors).toBeUndefined();
    expect(body.valid).toBe(true);
    // api-2 has its type, runtime and start command from api's mapping (a merge key), `copy` its variables by alias.
    expect(body.plan.services).toEqual(['api', 'api-2']);
    expect(body.plan.envGroups).toEqual(['shared', 'copy']);
    const typo = body.plan.warnings.find((w: any) => w.path === 'services[0].rootdir');
    expect(typo).toMatchObject({ resource: 'api', line: 7 });
    expect(typo.warning).toBe('unknown field "rootdir": ignored (did you mean "rootDir"?)');
    // A field nothing is close to gets no guess.
    const far = await validate(
      owner,
      'services:\n  - type: web\n    name: w\n    runtime: node\n    persistenceMode: x\n',
    );
    expect(far.body.valid).toBe(true);
    expect(far.body.plan.warnings.find((w: any) => w.path === 'services[0].persistenceMode')).toEqual({
      path: 'services[0].persistenceMode',
      resource: 'w',
      line: 5,
      column: 5,
      warning: 'unknown field "persistenceMode": ignored',
    });
  });

  it('keeps type errors and missing fields as errors, through merges too; more than 100 aliases is an error', async () => {
    const owner = await signUp(t.api);
    const broken = await validate(
      owner,
      'services:\n  - &base\n    type: web\n    name: a\n    runtime: node\n    numInstances: lots\n  - <<: *base\n    runtime: cobol\n',
    );
    expect(broken.body.valid).toBe(false);
    const paths = broken.body.errors.map((e: any) => e.path);
    expect(paths).toEqual(expect.arrayContaining(['services[0].numInstances', 'services[1].runtime']));
    // The merged mapping's own name is "a" too: a duplicate name, as Render would say.
    expect(paths).toContain('services[1].name');
    const nameless = await validate(owner, 'envVarGroups:\n  - envVars: []\n');
    expect(nameless.body.errors).toEqual([expect.objectContaining({ path: 'envVarGroups[0].name', line: 2 })]);
    const groups = Array.from({ length: 101 }, (_, i) => `  - name: g${i}\n    envVars: *e`).join('\n');
    const bomb = await validate(
      owner,
      `envVarGroups:\n  - name: first\n    envVars: &e\n      - key: K\n        value: v\n${groups}\n`,
    );
    expect(bomb.status).toBe(200);
    expect(bomb.body.valid).toBe(false);
    expect(bomb.body.errors.map((e: any) => e.error)).toContain('the file uses more than 100 aliases');
    // Few aliases of one big list: each would be walked again (a 1.8 MB file read as 180 MB); refused, and quickly.
    const vars = Array.from({ length: 50_000 }, (_, i) => `      - key: K${i}\n        value: v`).join('\n');
    const copies = Array.from({ length: 99 }, (_, i) => `  - name: c${i}\n    envVars: *big`).join('\n');
    const started = performance.now();
    const wide = await validate(owner, `envVarGroups:\n  - name: big\n    envVars: &big\n${vars}\n${copies}\n`);
    expect(wide.status).toBe(200);
    expect(wide.body.valid).toBe(false);
    expect(wide.body.errors.map((e: any) => e.error)).toContain("the file's aliases stand for more than 20000 values");
    console.log(`99 aliases of a 50,000-entry list refused in ${Math.round(performance.now() - started)} ms`);
  });

  it('syncs what aliases and merge keys say; a form field is read as the type the route declares', async () => {
    const owner = await signUp(t.api);
    const wrong = await t.api.call('POST', '/v1/blueprints', {
      ...owner,
      ...(await multipart({ name: 'flags', autoSync: 'maybe' }, await packBlueprint(GROUPS))),
    });
    expect(wrong.status).toBe(400);
    expect(wrong.body.code).toBe('validation_failed');
    expect(JSON.stringify(wrong.body.details)).toMatch(/autoSync/);
    expect((await t.api.get('/v1/blueprints', owner)).body).toEqual([]);

    const created = await t.api.call('POST', '/v1/blueprints', {
      ...owner,
      ...(await multipart({ name: 'flags', autoSync: 'false' }, await packBlueprint(GROUPS))),
    });
    expect(created.status).toBe(201);
    expect(created.body.blueprint.autoSync).toBe(false);
    const sync = await syncEnded(t.api, owner, created.body.blueprint.id, created.body.sync.id);
    expect(sync.error).toBeUndefined();
    const list = await t.api.get('/v1/env-groups', owner);
    const vars = async (name: string) => {
      const id = list.body.find((g: any) => g.name === name).id;
      const group = (await t.api.get(`/v1/env-groups/${id}`, owner)).body;
      return Object.fromEntries(group.envVars.map((v: any) => [v.key, v.value]));
    };
    expect(await vars('copy')).toEqual({ LOG_LEVEL: 'info', REGION: 'eu' });
    expect(await vars('merged')).toEqual({ FROM_TEMPLATE: 'yes' });
    expect(await vars('templated')).toEqual({ FROM_TEMPLATE: 'yes' });
    // The uploaded blueprint keeps autoSync off: a new archive waits for a sync asked for.
    expect((await t.api.get(`/v1/blueprints/${created.body.blueprint.id}`, owner)).body.autoSync).toBe(false);
  });
});
