/**
 * POST /v1/blueprints/validate on every real render.yaml in test/fixtures/blueprints (its README says where each comes
 * from), plus Render's reading of YAML quirks, the size limit and who may call it.
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { signUp, type TestUser } from './helpers/client.js';
import { useServer } from './helpers/server.js';

const CORPUS = path.resolve(import.meta.dirname, 'fixtures/blueprints');
const files = readdirSync(CORPUS).filter((f) => f.endsWith('.yaml'));

/** The messy files, and an error each must report, at its line. */
const MESSY: Record<string, { path: string; line: number; error: RegExp }> = {
  '0-AB__file-share.yaml': { path: '', line: 1, error: /invalid YAML/ },
  '00-Aryan__Procurement-AI-.yaml': { path: 'services[0].type', line: 3, error: /got "database"/ },
  '0001Moksh__aushadhi-360-fast-api.yaml': { path: 'services[0].runtime', line: 7, error: /got "python-3.11.0"/ },
};
/** Files with fields Render reads and Slipway does not know: valid, with a warning at the field's line. */
const UNKNOWN_FIELDS: Record<string, { path: string; line: number; warning: RegExp }> = {
  '001kenji__soie-backend.yaml': { path: 'redis', line: 29, warning: /^unknown field "redis": ignored$/ },
  'diegofornalha__backend-rag-ia.yaml': {
    path: 'services[0].dockerBuildContext',
    line: 7,
    warning: /^unknown field "dockerBuildContext": ignored$/,
  },
};
/** A few plans, counted by hand from the files. */
const PLANS: Record<string, { services: number; databases: number; keyValue: number; envGroups: number }> = {
  'render-examples__mastodon.yaml': { services: 3, databases: 1, keyValue: 1, envGroups: 1 },
  'render-examples__django.yaml': { services: 1, databases: 1, keyValue: 0, envGroups: 0 },
  'render-examples__postgresql-missing-trigger-index.yaml': { services: 0, databases: 1, keyValue: 0, envGroups: 0 },
  'render-examples__celery.yaml': { services: 3, databases: 0, keyValue: 1, envGroups: 0 },
};

describe('blueprints: validate', () => {
  const t = useServer();
  const validate = async (user: TestUser, text: string | Uint8Array, ownerId = user.workspaceId) => {
    const form = new FormData();
    if (ownerId) form.append('ownerId', ownerId);
    form.append('file', new Blob([typeof text === 'string' ? text : new Uint8Array(text)]), 'render.yaml');
    const res = await fetch(`${t.server.url}/v1/blueprints/validate`, {
      method: 'POST',
      body: form,
      headers: { cookie: `slipway_session=${user.cookie}`, 'x-requested-with': 't' },
    });
    return { status: res.status, body: (await res.json()) as any };
  };

  it.runIf(files.length > 0)(
    'reads the whole corpus: valid files with their plan, messy ones with their lines',
    async () => {
      const owner = await signUp(t.api);
      expect(files).toHaveLength(40);
      for (const file of files) {
        const { status, body } = await validate(owner, readFileSync(path.join(CORPUS, file)));
        expect(status, file).toBe(200);
        const messy = MESSY[file];
        if (messy) {
          expect(body.valid, file).toBe(false);
          expect(body.plan).toBeUndefined();
          expect(body.errors, file).toEqual(
            expect.arrayContaining([expect.objectContaining({ path: messy.path, line: messy.line })]),
          );
          expect(body.errors.find((e: any) => e.path === messy.path).error, file).toMatch(messy.error);
          continue;
        }
        expect(body, file).toMatchObject({ valid: true });
        expect(body.errors).toBeUndefined();
        const unknown = UNKNOWN_FIELDS[file];
        if (unknown) {
          const found = body.plan.warnings.find((w: any) => w.path === unknown.path);
          expect(found, file).toMatchObject({ line: unknown.line });
          expect(found.warning, file).toMatch(unknown.warning);
        }
        const counts = PLANS[file];
        if (counts)
          expect({
            services: body.plan.services.length,
            databases: body.plan.databases.length,
            keyValue: body.plan.keyValue.length,
            envGroups: body.plan.envGroups.length,
          }).toEqual(counts);
      }
    },
  );

  it('reads an unquoted off as the string "off", as Render does', async () => {
    const owner = await signUp(t.api);
    const file = [
      'previews:',
      '  generation: off',
      'services:',
      '  - type: web',
      '    name: api',
      '    runtime: node',
      '    autoDeployTrigger: off',
      '    buildCommand: npm ci',
      '    startCommand: node server.js',
    ].join('\n');
    expect((await validate(owner, file)).body).toMatchObject({ valid: true, plan: { services: ['api'] } });
    const bad = file.replace('autoDeployTrigger: off', 'autoDeployTrigger: never');
    expect((await validate(owner, bad)).body.errors).toEqual([
      expect.objectContaining({ path: 'services[0].autoDeployTrigger', line: 7, column: 24 }),
    ]);
  });

  it('never refuses a valid file for what this Slipway cannot run: those are warnings of the plan', async () => {
    const owner = await signUp(t.api);
    const file = [
      'services:',
      '  - type: web',
      '    name: app',
      '    runtime: docker',
      '    region: frankfurt',
      '    plan: pro max',
      '    disk: {name: data, mountPath: /data, sizeGB: 10}',
      '    initialDeployHook: ./seed.sh',
    ].join('\n');
    const { body } = await validate(owner, file);
    expect(body.valid).toBe(true);
    // A docker service's disk is made like any other's; the hook is what this Slipway cannot run.
    expect(body.plan.warnings).toEqual([
      expect.objectContaining({ resource: 'app', path: 'services[0].initialDeployHook', line: 8 }),
    ]);
  });

  it("reads docker and image services' fields without a warning, and says where one is ignored", async () => {
    const owner = await signUp(t.api);
    const file = [
      'services:',
      '  - type: web',
      '    name: built',
      '    runtime: docker',
      '    dockerfilePath: ./docker/Dockerfile',
      '    dockerContext: .',
      '    dockerCommand: node server.js',
      '    registryCredential:',
      '      fromRegistryCreds:',
      '        name: hub',
      '  - type: worker',
      '    name: pulled',
      '    runtime: image',
      '    image:',
      '      url: ghcr.io/acme/worker:1.2',
      '      creds:',
      '        fromRegistryCreds:',
      '          name: ghcr',
    ].join('\n');
    const { body } = await validate(owner, file);
    expect(body).toMatchObject({ valid: true, plan: { services: ['built', 'pulled'], warnings: [] } });
    // A docker field on another runtime is read by nothing: a warning at its line.
    const native = await validate(owner, file.replace('runtime: docker', 'runtime: node'));
    expect(native.body.plan.warnings).toEqual(
      // At the value: a nested mapping's starts on the line below its key.
      Object.entries({ dockerfilePath: 5, dockerContext: 6, dockerCommand: 7, registryCredential: 9 }).map(
        ([key, line]) =>
          expect.objectContaining({
            resource: 'built',
            path: `services[0].${key}`,
            line,
            warning: `${key} is read for runtime docker only: ignored`,
          }),
      ),
    );
    // A credential is named: `fromRegistryCreds` without a name, or a name that is not a string, is an error.
    const nameless = await validate(owner, file.replace('          name: ghcr', '          label: ghcr'));
    expect(nameless.body.valid).toBe(false);
    expect(nameless.body.errors).toEqual([
      expect.objectContaining({ path: 'services[1].image.creds.fromRegistryCreds.name', line: 18 }),
    ]);
    const listed = await validate(owner, file.replace('        name: hub', '        name: [hub]'));
    expect(listed.body.errors).toEqual([
      expect.objectContaining({ path: 'services[0].registryCredential.fromRegistryCreds.name', line: 10 }),
    ]);
    const urlless = await validate(owner, file.replace('      url: ghcr.io/acme/worker:1.2\n', ''));
    expect(urlless.body.errors).toEqual([expect.objectContaining({ path: 'services[1].image.url', line: 15 })]);
  });

  it('reports broken YAML and wrong types as 200 valid: false with lines; over 10 MB is 413', async () => {
    const owner = await signUp(t.api);
    const broken = await validate(owner, 'services:\n  - name: [unclosed\n');
    expect(broken.status).toBe(200);
    expect(broken.body.valid).toBe(false);
    expect(broken.body.errors[0].line).toBeGreaterThan(0);
    const typed = await validate(
      owner,
      'services:\n  - name: a\n    type: web\n    runtime: node\n    numInstances: two\n',
    );
    expect(typed.body.errors).toEqual([expect.objectContaining({ path: 'services[0].numInstances', line: 5 })]);
    const dup = await validate(owner, 'databases:\n  - name: db\n  - name: db\n');
    expect(dup.body.errors).toEqual([expect.objectContaining({ path: 'databases[1].name', line: 3 })]);
    // An error on every line of a big file: the first 100 are listed, then one entry saying the rest are not.
    const many = await validate(
      owner,
      `services:\n${Array.from({ length: 5000 }, (_, i) => `  - name: s${i}\n    type: web\n    bogus: 1\n`).join('')}`,
    );
    expect(many.body.valid).toBe(false);
    expect(many.body.errors).toHaveLength(101);
    expect(many.body.errors[100].error).toMatch(/not listed/);
    const big = await validate(owner, `# ${'x'.repeat(10 * 1024 * 1024)}\nservices: []\n`);
    expect(big.status).toBe(413);
    expect(big.body.code).toBe('payload_too_large');
  });

  it("answers 404 for another workspace's ownerId and 401 without a session", async () => {
    const [a, b] = [await signUp(t.api), await signUp(t.api)];
    expect((await validate(a, 'services: []\n', b.workspaceId)).status).toBe(404);
    const res = await fetch(`${t.server.url}/v1/blueprints/validate`, { method: 'POST', body: new FormData() });
    expect(res.status).toBe(401);
  });
});
