import { afterAll, describe, expect, it } from 'vitest';
import { isPublicAddress } from '../src/lib/ip-ranges.js';
import { signUp } from './helpers/client.js';
import { waitFor } from './helpers/process.js';
import { useServer } from './helpers/server.js';
import { startReceiver, type Receiver } from './helpers/webhook-receiver.js';

// The SSRF guard on (no SLIPWAY_WEBHOOK_ALLOW_PRIVATE): only public addresses are reachable.
const t = useServer({ SLIPWAY_WEBHOOK_RETRY_BASE_MS: '60000', SLIPWAY_WEBHOOK_POLL_MS: '50' });
let r: Receiver;
afterAll(() => r?.close());

describe('webhooks: the SSRF guard', () => {
  it('refuses, at creation, URLs whose host is a literal private, reserved or metadata address', async () => {
    const owner = await signUp(t.api);
    for (const url of [
      'http://127.0.0.1/',
      'http://127.1/',
      'http://2130706433/',
      'http://10.0.0.1/',
      'http://172.16.0.1/',
      'http://192.168.1.1/',
      'http://169.254.169.254/latest/meta-data/',
      'http://100.64.0.1/',
      'http://224.0.0.1/',
      'http://0.0.0.0/',
      'http://[::1]/',
      'http://[::]/',
      'http://[fe80::1]/',
      'http://[fd00::1]/',
      'http://[::ffff:127.0.0.1]/',
      'http://[::ffff:169.254.169.254]/',
      // Issue 29: the URL parser writes these as [::7f00:1] and [::a9fe:a9fe], which ipaddr.js calls unicast.
      'http://[::127.0.0.1]/',
      'http://[::169.254.169.254]/',
      'http://[64:ff9b::127.0.0.1]/', // NAT64 of loopback
      'http://[2002:a9fe:a9fe::1]/', // 6to4 of the metadata address
    ]) {
      const res = await t.api.post('/v1/webhooks', { name: 'ssrf', url }, owner);
      expect(res.status, url).toBe(400);
      expect(res.body.code).toBe('validation_failed');
    }
    expect(
      (await t.api.post('/v1/webhooks', { name: 'ok', url: 'https://8.8.8.8/', enabled: false }, owner)).status,
    ).toBe(201);
  });

  it('refuses, at delivery, a hostname that resolves to a private address (localhost)', async () => {
    const owner = await signUp(t.api);
    r = await startReceiver();
    const created = await t.api.post('/v1/webhooks', { name: 'rebind', url: `http://localhost:${r.port}/hook` }, owner);
    expect(created.status).toBe(201);
    await t.api.post(`/v1/webhooks/${created.body.id}/test`, undefined, owner);
    const [attempt] = await waitFor('the refused attempt', async () => {
      const log = (await t.api.get(`/v1/webhooks/${created.body.id}/events`, owner)).body;
      return log.length ? log.map((e: any) => e.webhookEvent) : undefined;
    });
    expect(attempt).toMatchObject({ error: expect.stringMatching(/^refused: /) });
    expect(attempt.statusCode).toBeUndefined();
    expect(r.received).toEqual([]);
  });

  it('classifies addresses (v4, v6 and v4-mapped v6)', () => {
    for (const a of ['8.8.8.8', '1.1.1.1', '2606:4700:4700::1111']) expect(isPublicAddress(a), a).toBe(true);
    for (const a of ['127.0.0.1', '10.1.2.3', '169.254.169.254', '100.100.0.1', '239.1.1.1', '0.0.0.0', '::1', '::'])
      expect(isPublicAddress(a), a).toBe(false);
    for (const a of ['::ffff:10.0.0.1', '::ffff:7f00:1', 'fe80::1', 'fc00::1', 'ff02::1', 'not an ip'])
      expect(isPublicAddress(a), a).toBe(false);
  });

  // Issue 29: `http://[::127.0.0.1]/` passed the guard: ipaddr.js calls ::/96 (IPv4-compatible) unicast.
  it('judges an IPv6 address that carries an IPv4 one by that IPv4 address, and refuses the reserved rest', () => {
    const refused = [
      '::7f00:1', // ::127.0.0.1, IPv4-compatible (deprecated), as the URL parser writes it
      '::a9fe:a9fe', // ::169.254.169.254
      '::808:808', // IPv4-compatible, even of a public address: deprecated, nothing routes it
      '::1:2:3:4', // the rest of ::/8, reserved
      '::ffff:0:7f00:1', // IPv4-translated (RFC 6145)
      '64:ff9b::7f00:1', // NAT64 (RFC 6052) of 127.0.0.1
      '64:ff9b::a00:1', // NAT64 of 10.0.0.1
      '64:ff9b::a9fe:a9fe', // NAT64 of the metadata address
      '64:ff9b:1::808:808', // NAT64's local-use prefix (RFC 8215)
      '2002:7f00:1::1', // 6to4 of 127.0.0.1
      '2002:c0a8:101::1', // 6to4 of 192.168.1.1
      '2001:0:4136:e378:8000:63bf:3fff:fdd2', // Teredo
      '2001:db8::1', // documentation
      '4000::1', // outside IANA's global unicast 2000::/3
    ];
    for (const a of refused) expect(isPublicAddress(a), a).toBe(false);
    // A DNS64 network gives v4-only receivers NAT64 addresses: public ones stay reachable.
    for (const a of ['64:ff9b::808:808', '2002:808:808::1', '::ffff:8.8.8.8', '2a00:1450:4001::1'])
      expect(isPublicAddress(a), a).toBe(true);
  });
});
