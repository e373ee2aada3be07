/**
 * The dependency cache (docs/deploys.md, "Builds"): a service's next build with the same lockfile and package.json restores
 * node_modules instead of installing from nothing; a changed lockfile, `clearCache: "clear"` and another service all
 * miss; another service's build cannot even see it; past SLIPWAY_BUILD_CACHE_MB (1 MiB here) it is trimmed.
 */
import { mountsUnder } from '../src/runtime/local/build-disks.js';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { FIXTURES, deployFixture, finished, packFixture, upload, viaRouter } from './helpers/apps.js';
import { signUp, type Caller } from './helpers/client.js';
import { waitFor } from './helpers/process.js';
import { useServer } from './helpers/server.js';

const t = useServer({ SLIPWAY_BUILD_CACHE_MB: '1' });
const DEPLOY_MS = 120_000;
const RESTORED = '==> Restored node_modules from the build cache';
const MISSED = '==> No build cache for these dependencies';
/** npm's summary line: the install really ran. */
const INSTALLED = /added \d+ packages?/;

/** Where a service's build sees its cache (on its build disk, mounted there during its builds only). */
const cacheDir = (serviceId: string) => path.join(t.server.dataDir, 'services', serviceId, 'build', 'cache');

/**
 * What `look` finds in a service's cache: where its build disk is still mounted after a build (kept for the next one),
 * there; else from its image mounted read-only (no build is running).
 */
function inCache<T>(serviceId: string, look: (cache: string) => T): T {
  const buildDir = path.join(t.server.dataDir, 'services', serviceId, 'build');
  if (mountsUnder(buildDir).includes(buildDir)) return look(cacheDir(serviceId));
  const image = path.join(t.server.dataDir, 'services', serviceId, 'build-disk.img');
  const dir = mkdtempSync(path.join(tmpdir(), 'slipway-cache-look-'));
  execFileSync('mount', ['-o', 'loop,ro', image, dir]);
  try {
    return look(path.join(dir, 'cache'));
  } finally {
    execFileSync('umount', [dir]);
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The saved keys once the build has ended: one, other than any of `old`. */
const savedKeys = (serviceId: string, old: string[]) =>
  waitFor('the build cache saved', async () => {
    const keys = inCache(serviceId, (cache) =>
      existsSync(path.join(cache, 'modules')) ? readdirSync(path.join(cache, 'modules')) : [],
    );
    return keys.length === 1 && !old.includes(keys[0]!) ? keys : undefined;
  });

async function redeploy(as: Caller, serviceId: string, body: Record<string, unknown> = {}) {
  const triggered = await t.api.post(`/v1/services/${serviceId}/deploys`, body, as);
  expect(triggered.status).toBe(201);
  return finished(t.api, as, serviceId, triggered.body.id, DEPLOY_MS);
}

describe('the dependency cache', () => {
  it(
    'is restored for the same lockfile, and missed for a changed one and after clearCache',
    async () => {
      const owner = await signUp(t.api);
      const { service, deploy: first } = await deployFixture(t.api, owner, 'pm-npm');
      expect(first.status, first.failureReason).toBe('live');
      expect(first.buildOutput).toContain(MISSED);
      expect(first.buildOutput).toMatch(INSTALLED);
      expect(first.buildOutput).toContain('==> Saving node_modules to the build cache, after the build');
      const [firstKey] = await savedKeys(service.id, []);

      const second = await redeploy(owner, service.id);
      expect(second.status, second.failureReason).toBe('live');
      expect(second.buildOutput).toContain(RESTORED);
      expect(second.buildOutput).not.toMatch(INSTALLED);
      const served = (await viaRouter(t.server.slipway.routerPort, service.slug, '/')).json();
      expect(served.dep).toBe(172800000); // ms('2 days'): the restored dependency loads

      // The same lockfile, reformatted: another key, so installed afresh.
      const lock = readFileSync(path.join(FIXTURES, 'pm-npm/package-lock.json'), 'utf8');
      const changed = await upload(
        t.api,
        owner,
        service.id,
        await packFixture('pm-npm', { 'package-lock.json': JSON.stringify(JSON.parse(lock), null, 4) }),
      );
      const third = await finished(t.api, owner, service.id, changed.body.deployId, DEPLOY_MS);
      expect(third.status, third.failureReason).toBe('live');
      expect(third.buildOutput).toContain(MISSED);
      expect(third.buildOutput).toMatch(INSTALLED);
      // Only the newest key is kept.
      expect(await savedKeys(service.id, [firstKey!])).toHaveLength(1);

      const cleared = await redeploy(owner, service.id, { clearCache: 'clear' });
      expect(cleared.status, cleared.failureReason).toBe('live');
      expect(cleared.buildOutput).toContain('==> Cleared the build cache');
      expect(cleared.buildOutput).toContain(MISSED);
      expect(cleared.buildOutput).toMatch(INSTALLED);
    },
    4 * DEPLOY_MS,
  );

  it(
    "is never another service's, which cannot read it either",
    async () => {
      const owner = await signUp(t.api);
      const { service: a, deploy } = await deployFixture(t.api, owner, 'pm-npm');
      expect(deploy.status, deploy.failureReason).toBe('live');
      expect(inCache(a.id, (cache) => existsSync(path.join(cache, 'modules')))).toBe(true);

      const { deploy: other } = await deployFixture(t.api, owner, 'pm-npm');
      expect(other.status, other.failureReason).toBe('live');
      expect(other.buildOutput).toContain(MISSED);
      expect(other.buildOutput).toMatch(INSTALLED);

      const { deploy: peek } = await deployFixture(t.api, owner, 'node-web', {
        serviceDetails: { runtime: 'node', envSpecificDetails: { buildCommand: `ls ${cacheDir(a.id)}` } },
      });
      expect(peek.status).toBe('build_failed');
      expect(peek.buildOutput).toMatch(/No such file or directory|Permission denied/);
    },
    3 * DEPLOY_MS,
  );

  it(
    'is trimmed to SLIPWAY_BUILD_CACHE_MB: the package managers’ caches go first',
    async () => {
      const owner = await signUp(t.api);
      // 2 MiB into npm's cache dir, past the 1 MiB the cache may hold.
      const fill = `npm ci && head -c 2097152 /dev/zero > "$npm_config_cache/filler"`;
      const { service, deploy } = await deployFixture(t.api, owner, 'pm-npm', {
        serviceDetails: { runtime: 'node', envSpecificDetails: { buildCommand: fill } },
      });
      expect(deploy.status, deploy.failureReason).toBe('live');
      expect(inCache(service.id, (cache) => existsSync(path.join(cache, 'store')))).toBe(false);
      expect(inCache(service.id, (cache) => existsSync(path.join(cache, 'modules')))).toBe(true);
    },
    DEPLOY_MS,
  );
});
