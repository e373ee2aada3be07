/** The route table as data (router/daemon/ loads it on every change): what survives the trip, and what is not redone. */
import { describe, expect, it } from 'vitest';
import { createRouteTable } from '../src/router/route-table.js';

const rules = { headers: [{ path: '/*', name: 'X-Frame-Options', value: 'DENY' }], routes: [] };

describe('the route table as data', () => {
  it('round-trips every kind of target and the domains, with static rules compiled again', () => {
    const api = createRouteTable('localhost');
    api.setInstances('web', 'srv-web', [{ host: '10.0.0.2', port: 10000, instanceId: 'i-1' }]);
    api.setStatic('site', 'srv-site', '/data/site', rules);
    api.setSuspended('off', 'srv-off');
    api.setDomains([
      { name: 'example.com', slug: 'site', redirectForName: null },
      { name: 'www.example.com', slug: 'site', redirectForName: 'example.com' },
    ]);
    const router = createRouteTable('localhost');
    router.importState(JSON.parse(JSON.stringify(api.exportState())));
    expect(router.resolve('web.localhost')).toEqual(api.resolve('web.localhost'));
    expect(router.resolve('off.localhost')).toEqual({ kind: 'suspended', serviceId: 'srv-off' });
    expect(router.resolve('www.example.com')).toEqual({ kind: 'redirect', to: 'example.com' });
    const site = router.resolve('example.com');
    expect(site?.kind === 'static' && site.rules?.headersFor('/a')).toEqual([['X-Frame-Options', 'DENY']]);
  });

  it('keeps compiled rules that did not change across updates, and compiles changed ones', () => {
    const api = createRouteTable('localhost');
    api.setStatic('site', 'srv-site', '/data/site', rules);
    const router = createRouteTable('localhost');
    router.importState(JSON.parse(JSON.stringify(api.exportState())));
    const compiled = router.get('site');
    api.setInstances('web', 'srv-web', []); // another service's change: the whole table is sent again
    router.importState(JSON.parse(JSON.stringify(api.exportState())));
    expect(router.get('site')?.kind === 'static' && router.get('site')).toMatchObject({ rules: expect.anything() });
    expect((router.get('site') as { rules?: unknown }).rules).toBe((compiled as { rules?: unknown }).rules);

    api.setStatic('site', 'srv-site', '/data/site', {
      ...rules,
      headers: [{ ...rules.headers[0]!, value: 'SAMEORIGIN' }],
    });
    router.importState(JSON.parse(JSON.stringify(api.exportState())));
    const site = router.resolve('site.localhost');
    expect(site?.kind === 'static' && site.rules?.headersFor('/a')).toEqual([['X-Frame-Options', 'SAMEORIGIN']]);
  });
});
