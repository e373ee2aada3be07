/**
 * Render's maintenance mode: the router answers for a web service (its page, or a redirect to `uri`) while the app
 * keeps running, and switching it takes no deploy.
 */
import { describe, expect, it } from 'vitest';
import { deployFixture, viaRouter } from './helpers/apps.js';
import { signUp } from './helpers/client.js';
import { useServer } from './helpers/server.js';

const t = useServer();

describe('maintenance mode', () => {
  it('serves the maintenance page or a redirect through the router, keeps the app running, and takes no deploy', async () => {
    const owner = await signUp(t.api);
    const { service } = await deployFixture(t.api, owner, 'node-web');
    const base = `/v1/services/${service.id}`;
    const router = () => viaRouter(t.server.slipway.routerPort, service.slug, '/', { agent: false });
    const boot = (await router()).json().boot;
    const deploysBefore = (await t.api.get(`${base}/deploys`, owner)).body.length;
    const set = (maintenanceMode: Record<string, unknown>) =>
      t.api.patch(base, { serviceDetails: { maintenanceMode } }, owner);

    const on = await set({ enabled: true });
    expect(on.status).toBe(200);
    expect(on.body.serviceDetails.maintenanceMode).toEqual({ enabled: true, uri: '' });
    const page = await router();
    expect(page.status).toBe(503);
    expect(page.text).toContain('Down for maintenance');
    expect(page.headers['cache-control']).toBe('no-store');

    expect((await set({ uri: 'https://status.example.com/down' })).status).toBe(200);
    const moved = await router();
    expect(moved.status).toBe(302);
    expect(moved.headers.location).toBe('https://status.example.com/down');

    const off = await set({ enabled: false });
    expect(off.body.serviceDetails.maintenanceMode).toEqual({ enabled: false, uri: 'https://status.example.com/down' });
    // The same process answers: it ran through, and nothing was deployed.
    const back = await router();
    expect(back.status).toBe(200);
    expect(back.json().boot).toBe(boot);
    expect((await t.api.get(`${base}/deploys`, owner)).body).toHaveLength(deploysBefore);

    const events = (await t.api.get(`${base}/events?limit=100`, owner)).body.map((i: any) => i.event);
    expect(events.filter((e: any) => e.type === 'maintenance_mode_enabled').map((e: any) => e.details)).toEqual([
      { enabled: false },
      { enabled: true },
    ]);
    expect(events.find((e: any) => e.type === 'maintenance_mode_uri_updated')?.details).toEqual({
      fromURI: '',
      toURI: 'https://status.example.com/down',
    });
  }, 120_000);

  it('refuses what it cannot honour with 400, changing nothing', async () => {
    const owner = await signUp(t.api);
    const created = await t.api.post(
      '/v1/services',
      { type: 'web_service', name: 'maint-input', serviceDetails: { runtime: 'node' } },
      owner,
    );
    const base = `/v1/services/${created.body.service.id}`;
    for (const maintenanceMode of [
      { enabled: true, uri: 'javascript:alert(1)' },
      { uri: '/maintenance.html' },
      // A header split in the Location the router would send, and no host at all.
      { enabled: true, uri: 'https://status.example.com/\r\nSet-Cookie: session=stolen' },
      { uri: 'http://' },
      { enabled: 'yes' },
      { enabled: true, mode: 'page' },
    ]) {
      const res = await t.api.patch(base, { serviceDetails: { maintenanceMode } }, owner);
      expect(res.status, JSON.stringify(maintenanceMode)).toBe(400);
      expect(JSON.stringify(res.body)).toMatch(/maintenanceMode/); // the message, or the invalid field
    }
    expect((await t.api.get(base, owner)).body.serviceDetails.maintenanceMode).toEqual({ enabled: false, uri: '' });
    const worker = await t.api.post(
      '/v1/services',
      { type: 'background_worker', name: 'maint-worker', serviceDetails: { runtime: 'node' } },
      owner,
    );
    const res = await t.api.patch(
      `/v1/services/${worker.body.service.id}`,
      { serviceDetails: { maintenanceMode: { enabled: true } } },
      owner,
    );
    expect(res.status).toBe(400);
    expect(res.body.message).toMatch(/web services only/);
  });
});
