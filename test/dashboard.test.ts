import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { packFixture, viaRouter } from './helpers/apps.js';
import { axeViolations, requireDashboardBuild, launchChromium, screenshot } from './helpers/browser.js';
import { startFakeIdp, type FakeIdp } from './helpers/fake-idp.js';
import { bootServer, type TestServer } from './helpers/server.js';
import { freePort, waitFor } from './helpers/wait.js';

/**
 * The dashboard in Debian's Chromium against a real Slipway: sign up, deploy an archive and watch it go live, its
 * logs, an env var, a rollback, a viewer's read-only view, an API key, the keyboard, axe. The steps build on each
 * other (one service, one owner), as a user's session would.
 */
let server: TestServer;
let google: FakeIdp; // an OpenID provider standing in for Google (the one third party faked)
let browser: Browser;
let owner: BrowserContext;
let page: Page;
const problems: string[] = []; // CSP violations and uncaught errors, on any page
const email = `owner-${Date.now()}@example.com`;
const password = 'correct horse battery';
let serviceUrl = '';
let slug = '';

function watch(p: Page) {
  p.on('console', (m) => {
    if (m.type() === 'error' && /Content.Security.Policy|Refused to/i.test(m.text())) problems.push(m.text());
  });
  p.on('pageerror', (err) => problems.push(String(err)));
}

async function newPage(context: BrowserContext) {
  const p = await context.newPage();
  watch(p);
  return p;
}

const app = async (urlPath = '/') => (await viaRouter(server.slipway.routerPort, slug, urlPath)).json();
const archive = (version: string) => packFixture('cli-app', { VERSION: version });

beforeAll(async () => {
  requireDashboardBuild();
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  google = await startFakeIdp('google', `${base}/v1/auth/oauth/google/callback`);
  server = await bootServer({
    SLIPWAY_PORT: String(port),
    SLIPWAY_PUBLIC_URL: base,
    SLIPWAY_OAUTH_GOOGLE_CLIENT_ID: google.clientId,
    SLIPWAY_OAUTH_GOOGLE_CLIENT_SECRET: google.clientSecret!,
    SLIPWAY_OAUTH_GOOGLE_ISSUER: google.issuer,
  });
  browser = await launchChromium();
  owner = await browser.newContext({ baseURL: server.url, viewport: { width: 1280, height: 800 } });
  page = await newPage(owner);
}, 120_000);
afterAll(async () => {
  await browser?.close();
  await server?.close();
  await google?.close();
});

describe('the dashboard in Chromium', () => {
  it('signs up, and lands on an empty services list', async () => {
    await page.goto('/');
    await page.waitForURL('**/sign-in**');
    expect(await axeViolations(page)).toEqual([]);
    await screenshot(page, 'sign-in');
    await page.getByRole('link', { name: 'Create an account' }).click();
    await page.getByLabel('Name').fill('Ada Owner');
    await page.getByLabel('Email').fill(email);
    await page.getByLabel('Password').fill(password);
    await page.getByRole('button', { name: 'Sign up' }).click();
    await page.waitForURL('**/services');
    await page.getByText('No services yet').waitFor();
  });

  it('uploads the app with a progress bar, streams its build, and the deploy goes live through the router', async () => {
    await page.getByRole('link', { name: 'New service' }).click();
    await page
      .locator('input[type=file]')
      .setInputFiles({ name: 'cli-app.tgz', mimeType: 'application/gzip', buffer: await archive('v1') });
    await page.getByLabel('Name').fill('dash-app');
    await page.getByLabel('Start command').fill('node server.js');
    await page.getByRole('button', { name: 'Create and deploy' }).click();
    await page.waitForURL(/\/services\/srv-[^/]+$/);
    serviceUrl = new URL(page.url()).pathname;
    const deploys = page.getByRole('list', { name: 'Deploys' });
    await deploys.getByText('live', { exact: true }).first().waitFor({ timeout: 120_000 });
    // The build's output arrived in the build log as it ran.
    await page
      .getByRole('log', { name: /Build output/ })
      .locator('.log-line')
      .first()
      .waitFor();
    const service = await page.evaluate(
      async (id) => (await fetch(`/v1/services/${id}`)).json(),
      serviceUrl.split('/')[2],
    );
    slug = service.slug;
    expect(await app()).toMatchObject({ version: 'v1' });
    expect(await axeViolations(page)).toEqual([]);
    await screenshot(page, 'service-deploys');
    // The same page at its dashboardUrl, as the API gives it.
    expect(service.dashboardUrl).toBe(`${server.config.publicUrl}${serviceUrl}`);
  }, 180_000);

  it('lists the service with its status', async () => {
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Services' }).click();
    const row = page.getByRole('row', { name: /dash-app/ });
    await row.getByText('live').waitFor();
    expect(await axeViolations(page)).toEqual([]);
    await screenshot(page, 'services');
  });

  it('tails the logs over the WebSocket: a line the app prints arrives', async () => {
    await page.goto(`${serviceUrl}/logs`); // a deep link, as a reload would ask for it
    await page.getByText('live', { exact: true }).waitFor();
    const marker = `dash-${Date.now()}`;
    await viaRouter(server.slipway.routerPort, slug, `/print-color?marker=${marker}`);
    const line = page.getByRole('log', { name: 'Service logs' }).getByText(`green ${marker}`);
    await line.waitFor({ timeout: 20_000 });
    // The ANSI colour became a class, not an escape code on screen.
    expect(await line.getAttribute('class')).toContain('ansi-green');
    expect(await axeViolations(page)).toEqual([]);
    await screenshot(page, 'service-logs');
  }, 60_000);

  it('adds an env var, redeploys, and the app sees it', async () => {
    await page.getByRole('link', { name: 'Environment' }).click();
    await page.getByLabel('Key').fill('GREETING');
    await page.getByLabel('Value', { exact: true }).fill('hello from the dashboard');
    await page.getByRole('button', { name: 'Save variable' }).click();
    await page.getByText('1 variable saved').waitFor();
    // Masked until revealed.
    const table = page.getByRole('table', { name: 'Environment variables' });
    expect(await table.textContent()).not.toContain('hello from the dashboard');
    await page.getByRole('button', { name: 'Reveal GREETING' }).click();
    await table.getByText('hello from the dashboard').waitFor();
    await page.getByRole('button', { name: 'Deploy now' }).click();
    await waitFor(
      'the new env in the app',
      async () => (await app()).env.GREETING === 'hello from the dashboard',
      120_000,
    );
    expect(await axeViolations(page)).toEqual([]);
    await screenshot(page, 'service-environment');
  }, 180_000);

  it('deploys a new archive, then rolls back to the first deploy', async () => {
    await page.getByRole('link', { name: 'Deploys' }).click();
    await page.getByLabel('Deploy a new archive:').setInputFiles({
      name: 'v2.tgz',
      mimeType: 'application/gzip',
      buffer: await archive('v2'),
    });
    await waitFor('v2 live', async () => (await app()).version === 'v2', 120_000);
    await page.reload();
    const oldest = page.getByRole('list', { name: 'Deploys' }).getByRole('listitem').last();
    await oldest.getByRole('button', { name: 'Roll back' }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Roll back' }).click();
    await waitFor('v1 back', async () => (await app()).version === 'v1', 120_000);
    await page.getByRole('list', { name: 'Deploys' }).getByText('rollback').first().waitFor();
  }, 240_000);

  it("runs a one-off job; adds a disk and snapshots it; scaling then shows the API's refusal", async () => {
    await page.getByRole('link', { name: 'Jobs' }).click();
    await page.getByLabel('Command').fill('node -e "process.exit(3)"');
    await page.getByRole('button', { name: 'Run job' }).click();
    const job = page.getByRole('list', { name: 'Jobs' }).getByRole('listitem').first();
    await job.getByText('exit 3').waitFor({ timeout: 60_000 });
    expect(await job.getByText('failed').count()).toBe(1);

    await page.getByRole('link', { name: 'Disk' }).click();
    await page.getByRole('button', { name: 'Add disk' }).click();
    await page.locator('code', { hasText: '/var/data' }).waitFor();
    // The disk is made when the instance restarts on it: until then a snapshot is refused (409, shown).
    const snapshots = page.getByRole('list', { name: 'Snapshots' });
    await waitFor(
      'a manual snapshot',
      async () => {
        await page.getByRole('button', { name: 'Take a snapshot' }).click();
        await page.waitForTimeout(500);
        return (await snapshots.getByText('manual').count()) > 0;
      },
      90_000,
    );
    expect(await axeViolations(page)).toEqual([]);

    await page.getByRole('link', { name: 'Settings' }).click();
    await page.getByLabel('Instances').fill('2');
    await page.getByRole('button', { name: 'Scale' }).click();
    await page.getByRole('alert').getByText('a service with a disk runs one instance').waitFor();
  }, 180_000);

  it('creates an API key whose token is shown once and works', async () => {
    await page.getByRole('link', { name: 'API keys' }).click();
    await page.getByLabel('Name').fill('ci');
    await page.getByRole('button', { name: 'Create key' }).click();
    const token = (await page.getByTestId('new-token').textContent())!.trim();
    expect(token).toMatch(/^slw_/);
    const me = await fetch(`${server.url}/v1/users`, { headers: { authorization: `Bearer ${token}` } });
    expect(me.status).toBe(200);
    expect(await axeViolations(page)).toEqual([]);
    await page.reload();
    expect(await page.content()).not.toContain(token);
  });

  it('creates a key-value datastore, shows its connection details, and exports it', async () => {
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Datastores' }).click();
    await page.getByLabel('Kind').selectOption('key-value');
    await page.getByLabel('Name').fill('cache');
    await page.getByRole('button', { name: 'Create' }).click();
    await page.waitForURL(/\/key-value\/red-/);
    await page.getByText('available', { exact: true }).waitFor({ timeout: 90_000 });
    const details = page.locator('dl.pairs');
    await details
      .getByText(/redis:\/\//)
      .first()
      .waitFor();
    expect(await details.getByRole('button', { name: 'Copy' }).count()).toBeGreaterThan(0);
    await page.getByRole('button', { name: 'Export now' }).click();
    const exported = page.getByRole('list', { name: 'Exports' }).getByRole('listitem').first();
    await exported.getByRole('link', { name: 'Download' }).waitFor({ timeout: 60_000 });
    const href = (await exported.getByRole('link', { name: 'Download' }).getAttribute('href'))!;
    const download = await page.evaluate(async (url) => (await fetch(url)).status, href);
    expect(download).toBe(200);
    expect(await axeViolations(page)).toEqual([]);
    await screenshot(page, 'datastore');
  }, 180_000);

  it('invites a viewer, who signs up from the link and sees the service read-only', async () => {
    await page.getByRole('link', { name: 'Team' }).click();
    const invitee = `viewer-${Date.now()}@example.com`;
    await page.getByLabel('Email').fill(invitee);
    await page.locator('form').getByLabel(/^Role/).selectOption('viewer');
    await page.getByRole('button', { name: 'Invite' }).click();
    const link = (await page.getByTestId('invite-link').textContent())!.trim();
    expect(link).toMatch(/\/invites\/[^/]+$/);
    expect(await axeViolations(page)).toEqual([]);
    await screenshot(page, 'team');

    const context = await browser.newContext({ baseURL: server.url });
    const viewer = await newPage(context);
    await viewer.goto(new URL(link).pathname);
    await viewer.getByLabel('Name').fill('Vic Viewer');
    await viewer.getByLabel('Email').fill(invitee);
    await viewer.getByLabel('Password').fill(password);
    await viewer.getByRole('button', { name: 'Sign up' }).click();
    await viewer.getByRole('button', { name: 'Join workspace' }).click();
    await viewer.waitForURL('**/services');
    await viewer.getByRole('link', { name: 'dash-app' }).click();
    await viewer.getByRole('heading', { name: 'dash-app' }).waitFor();
    expect(await viewer.getByText('viewer', { exact: true }).count()).toBeGreaterThan(0);
    expect(await viewer.getByRole('button', { name: 'Manual deploy' }).count()).toBe(0);
    expect(await viewer.getByRole('button', { name: 'Delete' }).count()).toBe(0);
    await viewer.getByRole('link', { name: 'Environment' }).click();
    await viewer.getByText('Viewers cannot read environment variables.').waitFor();
    await context.close();
  }, 60_000);

  it('works by keyboard alone: sign in, open the service, its logs, and a confirmation that Escape cancels', async () => {
    const context = await browser.newContext({ baseURL: server.url });
    const p = await newPage(context);
    await p.goto('/sign-in');
    await p.getByLabel('Email').focus();
    await p.keyboard.type(email);
    await p.keyboard.press('Tab');
    await p.keyboard.type(password);
    await p.keyboard.press('Enter');
    await p.waitForURL('**/services');
    const focusOn = async (name: string) => {
      for (let i = 0; i < 40; i++) {
        await p.keyboard.press('Tab');
        if ((await p.evaluate(() => document.activeElement?.textContent?.trim())) === name) return;
      }
      throw new Error(`${name} not reached by Tab`);
    };
    await p.getByRole('row', { name: /dash-app/ }).waitFor();
    await focusOn('dash-app');
    await p.keyboard.press('Enter');
    await p.waitForURL(`**${serviceUrl}`);
    await p.getByRole('button', { name: 'Restart' }).waitFor(); // the page is loaded when first opened
    await focusOn('Restart');
    await p.keyboard.press('Enter');
    const dialog = p.getByRole('dialog');
    await dialog.waitFor();
    expect(await p.evaluate(() => document.activeElement?.textContent)).toBe('Cancel');
    await p.keyboard.press('Escape');
    await dialog.waitFor({ state: 'hidden' });
    await focusOn('Logs');
    await p.keyboard.press('Enter');
    await p.waitForURL(`**${serviceUrl}/logs`);
    await context.close();
  }, 60_000);

  it('passes axe on the other main pages, fits a phone, and has a dark theme', async () => {
    for (const [href, name] of [
      ['/datastores', 'datastores'],
      ['/env-groups', 'env-groups'],
      ['/projects', 'projects'],
      ['/blueprints', 'blueprints'],
      ['/webhooks', 'webhooks'],
      ['/integrations', 'integrations'],
      ['/registry-credentials', 'registry-credentials'],
      ['/notifications', 'notifications'],
      ['/usage', 'usage'],
      ['/audit-log', 'audit-log'],
      [`${serviceUrl}/metrics`, 'service-metrics'],
    ] as const) {
      await page.goto(href);
      await page.getByRole('heading', { level: 1 }).first().waitFor();
      await page.waitForLoadState('networkidle');
      expect(await axeViolations(page), href).toEqual([]);
      await screenshot(page, name);
    }
    await page.setViewportSize({ width: 390, height: 844 });
    await page.goto('/services');
    await page.getByRole('row', { name: /dash-app/ }).waitFor();
    await screenshot(page, 'services-phone');
    expect(await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth)).toBeLessThanOrEqual(0);
    await page.setViewportSize({ width: 1280, height: 800 });
    const light = await page.evaluate(() => getComputedStyle(document.body).backgroundColor);
    await page.getByRole('button', { name: /^Theme:/ }).click(); // system → light
    await page.getByRole('button', { name: /^Theme:/ }).click(); // light → dark
    expect(await page.evaluate(() => document.documentElement.dataset.theme)).toBe('dark');
    expect(await page.evaluate(() => getComputedStyle(document.body).backgroundColor)).not.toBe(light);
    expect(await axeViolations(page)).toEqual([]);
    await screenshot(page, 'services-dark');
  }, 60_000);

  it('validates a render.yaml: the plan when it is valid, the errors by line when not', async () => {
    await page.goto('/blueprints');
    const yaml = page.getByLabel('render.yaml');
    await yaml.fill('services:\n  - type: web\n    name: api\n    runtime: node\n    startCommand: node server.js\n');
    await page.getByRole('button', { name: 'Validate' }).click();
    await page.getByRole('status').getByText('service api').waitFor();
    await yaml.fill('services:\n  - type: nonsense\n    name: api\n');
    await page.getByRole('button', { name: 'Validate' }).click();
    await page
      .getByRole('status')
      .getByText(/line 2/)
      .waitFor();
  });

  it('signs in with the configured OAuth provider from its button', async () => {
    google.signInAs({ sub: `g-${Date.now()}`, email: `oauth-${Date.now()}@example.com`, emailVerified: true });
    const context = await browser.newContext({ baseURL: server.url });
    const p = await newPage(context);
    await p.goto('/sign-in');
    await p.getByRole('link', { name: 'Continue with Google' }).click();
    await p.waitForURL('**/services');
    await p.getByText('No services yet').waitFor();
    await context.close();
  });

  it('keeps no secret in localStorage, and signing out ends the session on the server', async () => {
    const stored = await page.evaluate(() => JSON.stringify({ ...localStorage }));
    const cookie = (await owner.cookies()).find((c) => c.name === 'slipway_session')!;
    expect(cookie.httpOnly).toBe(true);
    expect(stored).not.toContain(cookie.value);
    expect(stored).not.toContain(password);
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.waitForURL('**/sign-in**');
    const after = await fetch(`${server.url}/v1/users`, { headers: { cookie: `slipway_session=${cookie.value}` } });
    expect(after.status).toBe(401);
    expect(problems).toEqual([]);
  });
});
