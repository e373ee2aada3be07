/**
 * Builds pick the project's package manager the standard Node way, through Node's bundled Corepack (README,
 * "Builds"): package-lock.json → npm ci, yarn.lock → yarn classic or berry per the project, pnpm-lock.yaml → pnpm,
 * none → npm install; then the build script with the same manager. yarn and pnpm work in a build command of one's
 * own. The fixtures' lockfiles resolve from the npm registry, so these builds download for real.
 */
import { describe, expect, it } from 'vitest';
import { deployFixture, finished, viaRouter } from './helpers/apps.js';
import { signUp } from './helpers/client.js';
import { useServer } from './helpers/server.js';

// This machine's npm registry is a mirror that serves no signatures, which Corepack checks for pnpm by default.
const t = useServer({ SLIPWAY_COREPACK_INTEGRITY_KEYS: '0' });
const DEPLOY_MS = 180_000;

const cases = [
  { fixture: 'pm-npm', command: 'npm ci --no-audit --no-fund && npm run build', builtBy: /^npm\/\d/ },
  { fixture: 'pm-none', command: 'npm install --no-audit --no-fund && npm run build', builtBy: /^npm\/\d/ },
  { fixture: 'pm-yarn-classic', command: 'yarn install --frozen-lockfile && yarn run build', builtBy: /^yarn\/1\./ },
  { fixture: 'pm-yarn-berry', command: 'yarn install --immutable && yarn run build', builtBy: /^yarn\/4\./ },
  { fixture: 'pm-pnpm', command: 'pnpm install --frozen-lockfile && pnpm run build', builtBy: /^pnpm\/10\./ },
];

describe.concurrent('package managers', () => {
  for (const { fixture, command, builtBy } of cases) {
    it(
      `${fixture}: installs with ${command.split(' ')[0]} and runs its build script with it`,
      async () => {
        const owner = await signUp(t.api);
        const { service, deploy } = await deployFixture(t.api, owner, fixture, {}, {});
        expect(deploy.status, deploy.failureReason).toBe('live');
        expect(deploy.buildOutput).toContain(`==> Running build command '${command}'`);
        expect(deploy.buildOutput).not.toMatch(/Unknown (env|user|project) config/); // another manager's settings
        const res = await viaRouter(t.server.slipway.routerPort, service.slug, '/');
        expect(res.status).toBe(200);
        const body = res.json();
        expect([172800000, '2d']).toContain(body.dep); // ms('2 days') or debug's humanize: the dependency loaded
        expect(body.build?.builtBy).toMatch(builtBy);
      },
      DEPLOY_MS,
    );
  }

  it(
    "yarn works in a build command of one's own (express-hello-world's documented `yarn`)",
    async () => {
      const owner = await signUp(t.api);
      const { service, deploy } = await deployFixture(t.api, owner, 'express-hello-world', {
        serviceDetails: { runtime: 'node', envSpecificDetails: { buildCommand: 'yarn', startCommand: 'node app.js' } },
      });
      expect(deploy.status, deploy.failureReason).toBe('live');
      expect(deploy.buildOutput).toMatch(/yarn install v1\.22/);
      expect((await viaRouter(t.server.slipway.routerPort, service.slug, '/')).status).toBe(200);
    },
    DEPLOY_MS,
  );

  it(
    'a start command `yarn start` or `pnpm run start` runs that package.json script',
    async () => {
      const owner = await signUp(t.api);
      for (const [fixture, startCommand, pm] of [
        ['pm-yarn-classic', 'yarn start', 'yarn-classic'],
        ['pm-pnpm', 'pnpm run start', 'pnpm'],
      ] as const) {
        const { service, deploy } = await deployFixture(t.api, owner, fixture, {
          serviceDetails: { runtime: 'node', envSpecificDetails: { startCommand } },
        });
        expect(deploy.status, deploy.failureReason).toBe('live');
        expect((await viaRouter(t.server.slipway.routerPort, service.slug, '/')).json().pm).toBe(pm);
      }
      // The same when a deploy without building picks up a start command set since.
      const { service } = await deployFixture(t.api, owner, 'pm-yarn-classic');
      const patched = await t.api.patch(
        `/v1/services/${service.id}`,
        { serviceDetails: { envSpecificDetails: { startCommand: 'yarn start' } } },
        owner,
      );
      expect(patched.status).toBe(200);
      const redeploy = await t.api.post(`/v1/services/${service.id}/deploys`, { deployMode: 'deploy_only' }, owner);
      expect(redeploy.status).toBe(201);
      const done = await finished(t.api, owner, service.id, redeploy.body.id, DEPLOY_MS);
      expect(done.status, done.failureReason).toBe('live');
      expect((await viaRouter(t.server.slipway.routerPort, service.slug, '/')).json().pm).toBe('yarn-classic');
    },
    3 * DEPLOY_MS,
  );
});
