import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { bootServer } from './helpers/server.js';
import { client, createApiKey, signUp } from './helpers/client.js';

describe('structured logs', () => {
  it('are JSON lines with request ids, and never hold a password, token or cookie, even at trace level', async () => {
    const stream = new PassThrough();
    const lines: string[] = [];
    stream.on('data', (chunk: Buffer) => lines.push(...chunk.toString('utf8').split('\n').filter(Boolean)));
    const server = await bootServer({}, undefined, { stream, level: 'trace' });
    try {
      const api = client(server.url);
      const owner = await signUp(api);
      await api.post('/v1/auth/login', { email: owner.email, password: owner.password });
      await api.post('/v1/auth/login', { email: owner.email, password: 'a wrong password' });
      const key = await createApiKey(api, owner);
      await api.get('/v1/users', { token: key.token });
      const invite = await api.post(
        '/v1/team-invites',
        { email: 'x@example.com', role: 'viewer' },
        { token: key.token },
      );
      await api.post(`/v1/team-invites/${invite.body.token}/accept`, undefined, owner);
      await api.get('/v1/nope', { token: key.token, headers: { 'request-id': 'trace-me' } });

      const entries = lines.map((l) => JSON.parse(l) as { reqId?: string; req?: { url: string } });
      expect(entries.length).toBeGreaterThan(10);
      expect(entries.some((e) => e.reqId === 'trace-me')).toBe(true);
      expect(entries.some((e) => e.req?.url === '/v1/team-invites/[redacted]/accept')).toBe(true);
      const all = lines.join('\n');
      for (const secret of [owner.password, 'a wrong password', owner.cookie, key.token, invite.body.token]) {
        expect(all).not.toContain(secret);
      }
    } finally {
      await server.close();
    }
  });
});
