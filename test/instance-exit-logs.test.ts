/**
 * What an app's logs say when one of its instances ends: nothing when Slipway stopped it (a restart, a deploy's
 * rollover), an error when it crashed.
 */
import { expect, it } from 'vitest';
import { deployFixture, viaRouter } from './helpers/apps.js';
import { signUp } from './helpers/client.js';
import { waitFor } from './helpers/process.js';
import { useServer } from './helpers/server.js';

const t = useServer();

type Entry = { message: string; labels: Array<{ name: string; value: string }> };
const label = (e: Entry, name: string) => e.labels.find((l) => l.name === name)?.value;

it('a restart logs no error for the instance it stopped; a crash logs at error', async () => {
  const owner = await signUp(t.api);
  // plain-web has no SIGTERM handler: the signal ends it, as it does most apps.
  const { service, deploy } = await deployFixture(t.api, owner, 'plain-web');
  expect(deploy.status).toBe('live');
  const instances = async () =>
    (await t.api.get(`/v1/services/${service.id}/instances`, owner)).body as Array<{ id: string }>;
  const [old] = await instances();
  const logs = async (query = '') => {
    const since = new Date(Date.now() - 600_000).toISOString();
    const res = await t.api.get(`/v1/logs?resource=${service.id}&startTime=${since}&limit=100${query}`, owner);
    expect(res.status).toBe(200);
    return res.body.logs as Entry[];
  };
  const router = (path: string) => viaRouter(t.server.slipway.routerPort, service.slug, path);

  expect((await t.api.post(`/v1/services/${service.id}/restart`, undefined, owner)).status).toBe(200);
  // The old instance drains after the restart answers; it is listed until every process of it is gone, so its
  // output files are complete.
  await waitFor('the old instance to stop', async () => !(await instances()).some((i) => i.id === old!.id));

  // A crash of the new instance, whose lines are collected after the old one's last lines (written before).
  expect((await router('/crash')).status).toBe(200);
  const crash = await waitFor('the crash in the logs', async () =>
    (await logs('&text=genuine%20crash')).find((e) => e.message.includes('Error: genuine crash')),
  );
  expect(label(crash, 'level')).toBe('error');

  const all = await logs();
  expect(all.filter((e) => /terminated/i.test(e.message)).map((e) => e.message)).toEqual([]);
  expect(all.filter((e) => label(e, 'instance') === old!.id && label(e, 'level') === 'error')).toEqual([]);

  // Under the sandbox, an app killed by a signal Slipway did not send is reported, at error.
  if ((await t.api.get('/status')).body.isolation.sandbox !== 'bwrap') return;
  await waitFor('the crashed instance to be back', async () => (await router('/')).status === 200);
  await router('/kill');
  const killed = await waitFor('the kill in the logs', async () =>
    (await logs('&text=killed')).find((e) => e.message === 'slipway: killed by SIGKILL'),
  );
  expect(label(killed, 'level')).toBe('error');
});
