/**
 * Lean artifacts (docs/deploys.md, "Artifacts and disk"): a new deploy's artifact shares its unchanged files with the
 * previous one (hard links), so kept deploys of an app cost little more than one; a service's disk use is measured after
 * each deploy and reported in usage and /status; past its budget, its oldest kept artifacts go first.
 */
import { randomBytes } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { deployFixture, finished, packFixture, upload, viaRouter } from './helpers/apps.js';
import { signUp } from './helpers/client.js';
import { waitFor } from './helpers/process.js';
import { useServer } from './helpers/server.js';

const MIB = 1024 * 1024;
// A small build disk (its image counts against the budget) and a budget for the budget test's service below.
const BUDGET_MB = 64;
const t = useServer({ SLIPWAY_BUILD_DISK_MB: '128', SLIPWAY_SERVICE_DISK_MB: String(BUDGET_MB) });

/** A megabytes-large file that does not compress away (the upload is a .tar.gz). */
const blob = (mb: number) =>
  randomBytes(mb * MIB)
    .toString('base64')
    .slice(0, mb * MIB);
const duBytes = (...dirs: string[]) =>
  execFileSync('du', ['-s', '-k', '-c', '--', ...dirs], { encoding: 'utf8' })
    .trim()
    .split('\n')
    .at(-1)!
    .split('\t')
    .map(Number)[0]! * 1024;

describe('artifacts and disk', () => {
  it('five deploys of the same app share their unchanged files, and usage and /status report the disk', async () => {
    const owner = await signUp(t.api);
    const data = { 'data.txt': blob(8) };
    const first = await deployFixture(t.api, owner, 'node-web', {}, { ...data, VERSION: '1' });
    expect(first.deploy.status, first.deploy.failureReason).toBe('live');
    for (let version = 2; version <= 5; version++) {
      const up = await upload(
        t.api,
        owner,
        first.service.id,
        await packFixture('node-web', { ...data, VERSION: String(version) }),
      );
      const deploy = await finished(t.api, owner, first.service.id, up.body.deployId);
      expect(deploy.status, deploy.failureReason).toBe('live');
    }
    expect((await viaRouter(t.server.slipway.routerPort, first.service.slug, '/')).status).toBe(200);

    const artifacts = path.join(t.server.dataDir, 'services', first.service.id, 'artifacts');
    const dirs = readdirSync(artifacts).map((d) => path.join(artifacts, d));
    expect(dirs).toHaveLength(5);
    // The files are shared once the deploy is live, off its critical path (docs/deploys.md, "Deploy speed").
    await waitFor('the last artifact linked to the others', async () =>
      new Set(dirs.map((d) => statSync(path.join(d, 'data.txt')).ino)).size === 1 ? true : undefined,
    );
    // One inode for the unchanged 8 MiB file, five names; the changed VERSION has one each.
    expect(new Set(dirs.map((d) => statSync(path.join(d, 'data.txt')).ino)).size).toBe(1);
    expect(new Set(dirs.map((d) => statSync(path.join(d, 'VERSION')).ino)).size).toBe(5);
    const one = duBytes(dirs[0]!);
    expect(one).toBeGreaterThan(8 * MIB);
    expect(duBytes(...dirs)).toBeLessThan(one * 1.2);

    const usage = (await t.api.get('/v1/usage', owner)).body;
    const service = usage.resources.find((r: { resourceId: string }) => r.resourceId === first.service.id);
    expect(service.diskBytes).toBeGreaterThanOrEqual(duBytes(...dirs));
    expect(service.diskBytes).toBeLessThan(BUDGET_MB * MIB);
    expect(usage.totals.diskBytes).toBe(service.diskBytes);

    const status = (await t.api.get('/status')).body;
    expect(status.disk.serviceBudgetBytes).toBe(BUDGET_MB * MIB);
    expect(status.disk.servicesBytes).toBeGreaterThanOrEqual(service.diskBytes);
  });

  it("a service past its budget loses its oldest kept artifacts first, never the live one's", async () => {
    const owner = await signUp(t.api);
    // 20 MiB of new content per deploy: four kept artifacts would pass the 64 MiB budget.
    const first = await deployFixture(t.api, owner, 'node-web', {}, { 'data.txt': blob(20) });
    expect(first.deploy.status, first.deploy.failureReason).toBe('live');
    const deploys = [first.deploy.id];
    for (let i = 0; i < 3; i++) {
      const up = await upload(t.api, owner, first.service.id, await packFixture('node-web', { 'data.txt': blob(20) }));
      const deploy = await finished(t.api, owner, first.service.id, up.body.deployId);
      expect(deploy.status, deploy.failureReason).toBe('live');
      deploys.push(deploy.id);
    }
    const artifacts = path.join(t.server.dataDir, 'services', first.service.id, 'artifacts');
    // Collected once the deploy is live, off its critical path (docs/deploys.md, "Deploy speed").
    await waitFor('the oldest artifacts collected', async () =>
      readdirSync(artifacts).includes(deploys[0]!) ? undefined : true,
    );
    const left = readdirSync(artifacts);
    expect(left).toContain(deploys.at(-1));
    expect(left).not.toContain(deploys[0]);
    expect(left.length).toBeLessThan(4);
    const usage = (await t.api.get('/v1/usage', owner)).body;
    const service = usage.resources.find((r: { resourceId: string }) => r.resourceId === first.service.id);
    expect(service.diskBytes).toBeLessThanOrEqual(BUDGET_MB * MIB);
  }, 60_000);
});
