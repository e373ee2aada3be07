/**
 * Notifications (docs/notifications.md): Render's settings routes, and deliveries through the events outbox: email to
 * the workspace's members over SMTP (a real SMTP server in the test, smtp-server) and Slack-style posts to an incoming
 * webhook (a real HTTP receiver). A build that fails (`exit 3`) is the failure: no app runs.
 */
import type http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import { SMTPServer } from 'smtp-server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEvents } from '../src/core/events.js';
import { notificationLevel } from '../src/core/notifications/messages.js';
import { createEventRepo } from '../src/store/repos/events.js';
import { deployFixture } from './helpers/apps.js';
import { addMember, client, signUp, type Client, type TestUser } from './helpers/client.js';
import { waitFor } from './helpers/process.js';
import { bootServer, type TestServer } from './helpers/server.js';
import { useReceivers } from './helpers/webhook-receiver.js';

interface Mail {
  user: string | undefined;
  from: string;
  to: string[];
  raw: string;
}
const mails: Mail[] = [];
const smtp = new SMTPServer({
  authOptional: true,
  disabledCommands: ['STARTTLS'],
  onAuth: (auth, _session, callback) =>
    auth.username === 'slipway' && auth.password === 's3cret-smtp'
      ? callback(null, { user: 'slipway' })
      : callback(new Error('bad login')),
  onData(stream, session, callback) {
    const chunks: Buffer[] = [];
    stream.on('data', (c: Buffer) => chunks.push(c));
    stream.on('end', () => {
      mails.push({
        user: session.user,
        from: session.envelope.mailFrom ? session.envelope.mailFrom.address : '',
        to: session.envelope.rcptTo.map((r) => r.address),
        raw: Buffer.concat(chunks).toString('utf8'),
      });
      callback();
    });
  },
});
const env: Record<string, string> = {
  SLIPWAY_WEBHOOK_ALLOW_PRIVATE: '1',
  SLIPWAY_WEBHOOK_RETRY_BASE_MS: '150',
  SLIPWAY_WEBHOOK_TIMEOUT_MS: '30000',
  SLIPWAY_WEBHOOK_POLL_MS: '50',
  SLIPWAY_SMTP_FROM: 'Slipway <alerts@slipway.test>',
};
// Registered before the server's: the server starts with the sink's port in SLIPWAY_SMTP_URL.
beforeAll(async () => {
  await new Promise<void>((resolve) => smtp.listen(0, '127.0.0.1', resolve));
  env.SLIPWAY_SMTP_URL = `smtp://slipway:s3cret-smtp@127.0.0.1:${(smtp.server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise<void>((resolve) => smtp.close(() => resolve())));
// Every log line at debug, to check that no credential reaches the log.
let logged = '';
const logSink = new Writable({
  write(chunk: Buffer, _enc, done) {
    logged += chunk.toString('utf8');
    done();
  },
});
const t = {} as { server: TestServer; api: Client };
beforeAll(async () => {
  t.server = await bootServer(env, undefined, { stream: logSink, level: 'debug' });
  t.api = client(t.server.url);
});
afterAll(() => t.server?.close());
const receiver = useReceivers();

const settingsUrl = (user: TestUser) => `/v1/notification-settings/owners/${user.workspaceId}`;
const overrideUrl = (serviceId: string) => `/v1/notification-settings/overrides/services/${serviceId}`;
/** A web service whose build fails: its deploy ends build_failed (deploy_ended, a failure). */
const failedDeploy = async (user: TestUser, name: string) => {
  const { service, deploy } = await deployFixture(t.api, user, 'node-web', {
    name,
    serviceDetails: { runtime: 'node', envSpecificDetails: { buildCommand: 'exit 3' } },
  });
  expect(deploy.status).toBe('build_failed');
  return service as { id: string; name: string };
};
const mailsAbout = (name: string) => mails.filter((m) => m.raw.includes(name));

describe('notification settings: the API', () => {
  it("has Render's defaults: email on, Slack off, failures only, previews off; overrides follow", async () => {
    const owner = await signUp(t.api);
    const got = await t.api.get(settingsUrl(owner), owner);
    expect(got.status, got.text).toBe(200);
    expect(got.body).toEqual({
      ownerId: owner.workspaceId,
      slackEnabled: false,
      emailEnabled: true,
      previewNotificationsEnabled: false,
      notificationsToSend: 'failure',
    });
    const created = await t.api.post(
      '/v1/services',
      { type: 'background_worker', name: 'quiet', serviceDetails: { runtime: 'node' } },
      owner,
    );
    const id = created.body.service.id;
    expect((await t.api.get(overrideUrl(id), owner)).body).toEqual({
      serviceId: id,
      previewNotificationsEnabled: 'default',
      notificationsToSend: 'default',
    });
    const patched = await t.api.patch(overrideUrl(id), { notificationsToSend: 'none' }, owner);
    expect(patched.body).toEqual({
      serviceId: id,
      previewNotificationsEnabled: 'default',
      notificationsToSend: 'none',
    });
    const list = await t.api.get(`/v1/notification-settings/overrides?ownerId=${owner.workspaceId}`, owner);
    expect(list.body).toEqual([{ cursor: expect.any(String), override: { type: 'service', ...patched.body } }]);
    const filtered = await t.api.get(`/v1/notification-settings/overrides?serviceId=srv-00000000000000000000`, owner);
    expect(filtered.body).toEqual([]);
  });

  it('keeps the Slack URL sealed and never answers it; a viewer reads, an admin writes', async () => {
    const owner = await signUp(t.api);
    const viewer = await addMember(t.api, owner, 'viewer');
    const url = 'https://hooks.slack.example/services/T000/B000/very-secret-path';
    const patched = await t.api.patch(settingsUrl(owner), { slackWebhookUrl: url, notificationsToSend: 'all' }, owner);
    expect(patched.status, patched.text).toBe(200);
    expect(patched.body).toMatchObject({ slackEnabled: true, notificationsToSend: 'all' });
    expect(patched.text).not.toContain('very-secret-path');
    const { rows } = await t.server.slipway.store.executeSql(
      'select sealed_slack_url from notification_settings where workspace_id = $1',
      [owner.workspaceId],
    );
    expect(rows[0].sealed_slack_url).not.toContain('very-secret-path');
    expect((await t.api.get(settingsUrl(owner), viewer)).body.slackEnabled).toBe(true);
    expect((await t.api.patch(settingsUrl(owner), { emailEnabled: false }, viewer)).status).toBe(403);
    const removed = await t.api.patch(settingsUrl(owner), { slackWebhookUrl: null }, owner);
    expect(removed.body.slackEnabled).toBe(false);
  });

  it('answers bad bodies with 400 in the error shape', async () => {
    const owner = await signUp(t.api);
    const created = await t.api.post(
      '/v1/services',
      { type: 'background_worker', name: 'bad-bodies', serviceDetails: { runtime: 'node' } },
      owner,
    );
    const bad = async (url: string, body: unknown) => {
      const res = await t.api.patch(url, body, owner);
      expect(res.status, `${url} ${JSON.stringify(body)}: ${res.text}`).toBe(400);
      expect(res.body).toMatchObject({
        id: expect.any(String),
        code: expect.stringMatching(/^(validation_failed|bad_request)$/),
      });
    };
    await bad(settingsUrl(owner), { notificationsToSend: 'sometimes' });
    await bad(settingsUrl(owner), { emailEnabled: 'yes' });
    await bad(settingsUrl(owner), { slackEnabled: true });
    await bad(settingsUrl(owner), { slackWebhookUrl: 'not a url' });
    await bad(settingsUrl(owner), { slackWebhookUrl: 'ftp://example.com/hook' });
    await bad(settingsUrl(owner), { slackWebhookUrl: 'https://user:pass@example.com/hook' });
    await bad(overrideUrl(created.body.service.id), { notificationsToSend: 'failures' });
    await bad(overrideUrl(created.body.service.id), { previewNotificationsEnabled: true });
    await bad(overrideUrl(created.body.service.id), { emailEnabled: false });
    const cursor = await t.api.get('/v1/notification-settings/overrides?cursor=nope', owner);
    expect(cursor.status).toBe(400);
  });

  it("answers 404 for another workspace's ids", async () => {
    const [a, b] = await Promise.all([signUp(t.api), signUp(t.api)]);
    const created = await t.api.post(
      '/v1/services',
      { type: 'background_worker', name: 'not-yours', serviceDetails: { runtime: 'node' } },
      a,
    );
    const id = created.body.service.id;
    expect((await t.api.get(settingsUrl(a), b)).status).toBe(404);
    expect((await t.api.patch(settingsUrl(a), { emailEnabled: false }, b)).status).toBe(404);
    expect((await t.api.get(overrideUrl(id), b)).status).toBe(404);
    expect((await t.api.patch(overrideUrl(id), { notificationsToSend: 'none' }, b)).status).toBe(404);
    expect((await t.api.get(`/v1/notification-settings/overrides?ownerId=${a.workspaceId}`, b)).status).toBe(404);
    // Named by id in b's list, a's service is simply not there.
    expect((await t.api.get(`/v1/notification-settings/overrides?serviceId=${id}`, b)).body).toEqual([]);
    expect((await t.api.get(settingsUrl(a), a)).body.emailEnabled).toBe(true);
  });
});

describe('notifications: deliveries', () => {
  it('a failed deploy emails every member and posts to Slack; an overridden service and a disabled channel get nothing', async () => {
    const owner = await signUp(t.api);
    const member = await addMember(t.api, owner, 'developer');
    const slack = await receiver();
    const slackUrl = `${slack.url}/T0/B0/xoxsecretpath`;
    expect((await t.api.patch(settingsUrl(owner), { slackWebhookUrl: slackUrl }, owner)).status).toBe(200);

    // Silenced first: its deploy's notifications would be queued before the next one's, and sent before them.
    const quiet = await t.api.post(
      '/v1/services',
      { type: 'web_service', name: 'quiet-svc', serviceDetails: { runtime: 'node' } },
      owner,
    );
    expect(quiet.status).toBe(201);
    await t.api.patch(overrideUrl(quiet.body.service.id), { notificationsToSend: 'none' }, owner);
    await failedDeployOf(owner, quiet.body.service.id);

    const loud = await failedDeploy(owner, 'loud-svc');
    const mail = await waitFor('the email', async () => mailsAbout('loud-svc')[0], 30_000, 50);
    expect(mail.to.sort()).toEqual([owner.email, member.email].sort());
    expect(mail.from).toBe('alerts@slipway.test');
    expect(mail.user).toBe('slipway'); // signed in with SLIPWAY_SMTP_URL's credentials
    expect(mail.raw).toMatch(/Subject: \[Slipway\] Deploy failed: loud-svc/);
    expect(mail.raw).toContain(loud.id);
    const posted = await waitFor(
      'the Slack post',
      async () => slack.received.find((r) => r.body.includes('loud-svc')),
      30_000,
      50,
    );
    expect(posted.json).toEqual({ text: expect.stringContaining('Deploy failed: loud-svc') });
    expect(posted.headers['content-type']).toBe('application/json');
    expect(mailsAbout('quiet-svc')).toEqual([]);
    expect(slack.received.filter((r) => r.body.includes('quiet-svc'))).toEqual([]);

    // Email off: Slack alone.
    await t.api.patch(settingsUrl(owner), { emailEnabled: false }, owner);
    await failedDeploy(owner, 'slack-only-svc');
    await waitFor(
      'the Slack post',
      async () => slack.received.find((r) => r.body.includes('slack-only-svc')),
      30_000,
      50,
    );
    expect(mailsAbout('slack-only-svc')).toEqual([]);
  }, 120_000);

  it("retries a Slack URL that fails, and one workspace's slow Slack URL does not hold another's notifications", async () => {
    const [slow, quick] = await Promise.all([signUp(t.api), signUp(t.api)]);
    // The slow one answers 500 once, then holds every post (the send lasts up to the 30 s timeout).
    const held: http.ServerResponse[] = [];
    const slowHook = await receiver((_req, res, i) => {
      if (i === 0) return void res.writeHead(500).end('no');
      held.push(res);
    });
    const quickHook = await receiver();
    await t.api.patch(
      settingsUrl(slow),
      { slackWebhookUrl: `${slowHook.url}/xoxsecretpath`, emailEnabled: false },
      slow,
    );
    await t.api.patch(settingsUrl(quick), { slackWebhookUrl: quickHook.url, emailEnabled: false }, quick);
    try {
      await failedDeploy(slow, 'slow-svc');
      await waitFor('the retry, held', async () => held.length >= 1 || undefined, 30_000, 20);
      await failedDeploy(quick, 'quick-svc');
      await waitFor(
        'the quick post',
        async () => quickHook.received.find((r) => r.body.includes('quick-svc')),
        30_000,
        20,
      );
      // It went out while the slow workspace's send was still under way, not after it.
      expect(held.some((r) => !r.socket?.destroyed)).toBe(true);
      expect(slowHook.received.every((r) => r.body.includes('slow-svc'))).toBe(true);
    } finally {
      for (const r of held) r.end('ok');
    }
  }, 120_000);

  it('a datastore down and a failed certificate notify; `all` adds good news; preview services only when enabled', async () => {
    const owner = await signUp(t.api);
    const slack = await receiver();
    await t.api.patch(settingsUrl(owner), { slackWebhookUrl: slack.url }, owner);
    const created = await t.api.post(
      '/v1/services',
      { type: 'web_service', name: 'cert-svc', serviceDetails: { runtime: 'node' } },
      owner,
    );
    const serviceId = created.body.service.id;
    // Recorded as the datastore reconciler and the ACME loop record them, through the same events outbox.
    const events = createEvents(createEventRepo(t.server.slipway.store.db), undefined, { emailConfigured: true });
    const record = (e: Omit<Parameters<typeof events.record>[0], 'workspaceId'>) =>
      events.record({ workspaceId: owner.workspaceId, ...e });
    const posted = (what: string) =>
      waitFor(what, async () => slack.received.find((r) => r.body.includes(what)), 30_000, 20);

    await record({
      datastoreId: 'dpg-0000000000000000000a',
      type: 'datastore_unavailable',
      details: { kind: 'postgres' },
    });
    expect((await posted('Postgres database unavailable')).json.text).toContain('dpg-0000000000000000000a');
    const mail = await waitFor('the email', async () => mailsAbout('dpg-0000000000000000000a')[0], 30_000, 20);
    expect(mail.to).toEqual([owner.email]);
    await record({ serviceId, type: 'certificate_issued', details: { name: 'quiet.example.com' } }); // good news: not at `failure`
    await record({ serviceId, type: 'certificate_failed', details: { name: 'a.example.com', error: 'CAA forbids' } });
    expect((await posted('Certificate order failed')).json.text).toMatch(/a\.example\.com[\s\S]*CAA forbids/);
    expect(slack.received.filter((r) => r.body.includes('quiet.example.com'))).toEqual([]);

    await t.api.patch(settingsUrl(owner), { notificationsToSend: 'all' }, owner);
    await record({ serviceId, type: 'certificate_issued', details: { name: 'b.example.com' } });
    await posted('b.example.com');

    // A crash notifies once an hour per service; the crash loop's suspension does in any case.
    await record({ serviceId, type: 'server_failed', details: { reason: { note: 'crash-one' } } });
    await posted('crash-one');
    await record({ serviceId, type: 'server_failed', details: { reason: { note: 'crash-two' } } });
    await record({ serviceId, type: 'service_crashlooping', details: { crashes: 5 } });
    await posted('Service suspended');
    expect(slack.received.filter((r) => r.body.includes('crash-two'))).toEqual([]);

    // A preview service (one with a parent) is quiet unless previews are on, for the workspace or by its override.
    await t.server.slipway.store.executeSql(
      `update services set details = details || '{"parentServer": {"id": "srv-0000000000000000000p", "name": "p"}}' where id = $1`,
      [serviceId],
    );
    await record({ serviceId, type: 'certificate_failed', details: { name: 'c.example.com', error: 'preview-quiet' } });
    await t.api.patch(overrideUrl(serviceId), { previewNotificationsEnabled: 'true' }, owner);
    await record({ serviceId, type: 'certificate_failed', details: { name: 'c.example.com', error: 'preview-loud' } });
    await posted('preview-loud');
    expect(slack.received.filter((r) => r.body.includes('preview-quiet'))).toEqual([]);
  });

  it('logs neither the SMTP password nor a Slack URL', () => {
    expect(logged).toContain('notification failed; retrying'); // the slow hook's 500 was logged…
    expect(logged).not.toContain('s3cret-smtp'); // …without what must not be
    expect(logged).not.toContain('xoxsecretpath');
  });

  it('classifies the failure events: deploys, crash loops, datastores, certificates', () => {
    expect(notificationLevel({ type: 'deploy_ended', details: { status: 'build_failed' } })).toBe('failure');
    expect(notificationLevel({ type: 'deploy_ended', details: { status: 'live' } })).toBe('success');
    expect(notificationLevel({ type: 'deploy_ended', details: { status: 'canceled' } })).toBeUndefined();
    expect(notificationLevel({ type: 'build_ended', details: { status: 'failed' } })).toBeUndefined();
    for (const type of [
      'server_failed',
      'service_crashlooping',
      'datastore_unavailable',
      'datastore_port_taken',
      'certificate_failed',
    ])
      expect(notificationLevel({ type }), type).toBe('failure');
    expect(notificationLevel({ type: 'cron_job_run_ended', details: { status: 'unsuccessful' } })).toBe('failure');
    expect(notificationLevel({ type: 'service_created' })).toBeUndefined();
  });
});

/** Uploads the build-failing app to an existing service and waits for its deploy to fail. */
async function failedDeployOf(user: TestUser, serviceId: string) {
  await t.api.patch(
    `/v1/services/${serviceId}`,
    { serviceDetails: { envSpecificDetails: { buildCommand: 'exit 3' } } },
    user,
  );
  const { packFixture, upload, finished } = await import('./helpers/apps.js');
  const up = await upload(t.api, user, serviceId, await packFixture('node-web'));
  expect(up.status, up.text).toBe(201);
  expect((await finished(t.api, user, serviceId, up.body.deployId)).status).toBe('build_failed');
}
