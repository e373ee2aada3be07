import { spawn } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FIXTURES, viaRouter } from './helpers/apps.js';
import { buildCli, killStartedCli, runCli, runCliInTerminal, startCli } from './helpers/cli.js';
import { client, signUp, type TestUser } from './helpers/client.js';
import { bootServer, type TestServer } from './helpers/server.js';
import { freePort, waitFor } from './helpers/wait.js';

let server: TestServer;
let owner: TestUser;
let home: string;
let config: string;
/** The app's directory, as a user's checkout: the fixture plus files that must stay home. */
let appDir: string;
const ESC = '\x1b[';

beforeAll(async () => {
  buildCli();
  // A port of its own: the last test restarts Slipway on it, under the CLI's saved context.
  server = await bootServer({ SLIPWAY_PORT: String(await freePort()) });
  owner = await signUp(client(server.url));
  home = mkdtempSync(path.join(tmpdir(), 'slipway-cli-'));
  config = path.join(home, 'config', 'slipway.json');
  appDir = path.join(home, 'cli-app');
  cpSync(path.join(FIXTURES, 'cli-app'), appDir, { recursive: true });
  writeFileSync(path.join(appDir, 'VERSION'), 'v1');
  writeFileSync(path.join(appDir, 'secret.txt'), 'kept at home by .slipwayignore');
  writeFileSync(path.join(appDir, 'debug.log'), 'kept at home by .gitignore');
  mkdirSync(path.join(appDir, 'local-only'));
  writeFileSync(path.join(appDir, 'local-only', 'notes'), 'kept at home by .gitignore');
  // A deeper .gitignore keeps what the root's leaves out, as git reads them.
  mkdirSync(path.join(appDir, 'fixtures'));
  writeFileSync(path.join(appDir, 'fixtures', '.gitignore'), '!expected.log\n');
  writeFileSync(path.join(appDir, 'fixtures', 'expected.log'), 'sent: a deeper .gitignore un-ignores it');
  writeFileSync(path.join(appDir, 'fixtures', 'other.log'), 'kept at home by the root .gitignore');
}, 120_000);
afterAll(async () => {
  killStartedCli();
  await server?.close();
  if (home) rmSync(home, { recursive: true, force: true });
});

const cli = (args: string[], options: Parameters<typeof runCli>[2] = {}) => runCli(config, args, options);
const app = async (urlPath = '/') => (await viaRouter(server.slipway.routerPort, 'cli-app', urlPath)).json();

describe('slipway login', () => {
  it('refuses a wrong password with exit code 3 and the API message, saving nothing', async () => {
    const res = await cli(['login', '--url', server.url, '--email', owner.email, '--password-stdin'], {
      input: 'wrong\n',
    });
    expect(res.code).toBe(3);
    expect(res.stderr).toMatch(/Error: .*(invalid|incorrect|wrong)/i);
    expect(res.stdout).toBe('');
    expect(() => statSync(config)).toThrow();
  });

  it('refuses a wrong API key with exit code 3', async () => {
    const res = await cli(['login', '--url', server.url, '--api-key', 'slw_not_a_real_key_000000000000']);
    expect(res.code).toBe(3);
    expect(res.stderr).toContain('Hint: sign in again');
  });

  it('signs in by email and password into a 0600 context holding an API key, and whoami shows it', async () => {
    const res = await cli(['login', '--url', server.url, '--email', owner.email, '--password-stdin'], {
      input: `${owner.password}\n`,
    });
    expect(res.code, res.stderr).toBe(0);
    expect(statSync(config).mode & 0o777).toBe(0o600);
    const saved = JSON.parse(readFileSync(config, 'utf8'));
    expect(saved.contexts[saved.current]).toMatchObject({ url: server.url, apiKey: expect.stringMatching(/^slw_/) });
    const who = await cli(['whoami', '--json']);
    expect(who.code).toBe(0);
    expect(JSON.parse(who.stdout)).toMatchObject({
      url: server.url,
      user: { email: owner.email },
      credential: 'api key',
    });
  });
});

describe('slipway deploy', () => {
  it('deploys a directory from nothing to live, streams the build, prints the URL; ignored files stay home', async () => {
    const res = await cli(['deploy', appDir, '--build-command', 'echo building-cli-app-$((6*7))'], {
      timeoutMs: 180_000,
    });
    expect(res.code, res.stderr).toBe(0);
    expect(res.stderr).toContain('Created web_service cli-app');
    expect(res.stderr).toContain('building-cli-app-42'); // the build's own output, streamed
    const service = JSON.parse((await cli(['services', 'show', 'cli-app', '--json'])).stdout);
    expect(res.stdout.trim()).toBe(service.serviceDetails.url); // stdout: the result only
    const answer = await app();
    expect(answer.version).toBe('v1');
    expect(answer.deployed).toContain('server.js');
    for (const ignored of [
      'secret.txt',
      'debug.log',
      'local-only',
      'local-only/notes',
      '.slipway',
      'fixtures/other.log',
    ])
      expect(answer.deployed).not.toContain(ignored);
    expect(answer.deployed).toContain('fixtures/expected.log');
    expect(JSON.parse(readFileSync(path.join(appDir, '.slipway', 'service.json'), 'utf8')).id).toBe(service.id);
  }, 240_000);

  it('deploys a change to the same service, and lists both deploys as JSON', async () => {
    writeFileSync(path.join(appDir, 'VERSION'), 'v2');
    const res = await cli(['deploy'], { cwd: appDir, timeoutMs: 180_000 });
    expect(res.code, res.stderr).toBe(0);
    expect(res.stderr).not.toContain('Created');
    expect((await app()).version).toBe('v2');
    const deploys = JSON.parse((await cli(['deploys', 'ls', 'cli-app', '--json'])).stdout);
    expect(deploys.map((d: { status: string }) => d.status)).toEqual(['live', 'deactivated']);
  }, 240_000);

  it("on a terminal, asks for what it cannot tell from the directory and shows the upload's progress", async () => {
    const dir = path.join(home, 'cli-asked');
    cpSync(path.join(FIXTURES, 'cli-app'), dir, { recursive: true });
    const res = await runCliInTerminal(config, ['deploy', dir], { input: 'starter\n', timeoutMs: 180_000 });
    expect(res.code, res.stdout).toBe(0);
    expect(res.stdout).toContain('Plan (free):'); // the runtime and the type came from package.json
    expect(res.stdout).toMatch(/Uploading \[.*\] \d+%/);
    const service = JSON.parse((await cli(['services', 'show', 'cli-asked', '--json'])).stdout);
    expect(service.serviceDetails).toMatchObject({ plan: 'starter', runtime: 'node' });
  }, 240_000);

  it("creates a new service from the directory's render.yaml, and open --print gives its URL and dashboard", async () => {
    const dir = path.join(home, 'cli-from-yaml');
    cpSync(path.join(FIXTURES, 'cli-app'), dir, { recursive: true });
    writeFileSync(
      path.join(dir, 'render.yaml'),
      'services:\n  - type: web\n    name: cli-from-yaml\n    runtime: node\n    plan: standard\n' +
        '    startCommand: node server.js\n    healthCheckPath: /healthz\n',
    );
    const res = await cli(['deploy', dir], { timeoutMs: 180_000 });
    expect(res.code, res.stderr).toBe(0);
    const service = JSON.parse((await cli(['services', 'show', 'cli-from-yaml', '--json'])).stdout);
    expect(service.serviceDetails).toMatchObject({
      plan: 'standard',
      runtime: 'node',
      healthCheckPath: '/healthz',
      envSpecificDetails: { startCommand: 'node server.js' },
    });
    expect((await cli(['open', 'cli-from-yaml'])).stdout.trim()).toBe(res.stdout.trim());
    expect((await cli(['open', 'cli-from-yaml', '--dashboard'])).stdout.trim()).toBe(service.dashboardUrl);
  }, 240_000);

  it('refuses a directory that does not exist with exit 2, before any service is made', async () => {
    const res = await cli(['deploy', path.join(home, 'no-such-dir')]);
    expect(res.code).toBe(2);
    expect(res.stderr).toContain('is not a directory');
    const names = JSON.parse((await cli(['services', 'ls', '--json'])).stdout).map((s: { name: string }) => s.name);
    expect(names).not.toContain('no-such-dir');
  });

  it('exits 5 with the failure reason when the deploy does not go live', async () => {
    const broken = path.join(home, 'broken-app');
    cpSync(path.join(FIXTURES, 'crash-on-start'), broken, { recursive: true });
    const res = await cli(['deploy', broken, '--runtime', 'node', '--type', 'web_service'], { timeoutMs: 180_000 });
    expect(res.code).toBe(5);
    expect(res.stderr).toMatch(/Error: deploy dep-\S+ (update_failed|build_failed)/);
    expect(res.stdout).toBe('');
  }, 240_000);
});

describe('slipway logs and env', () => {
  it('logs -f shows a line the app prints after the command started', async () => {
    const marker = `marker-${Date.now()}`;
    const follow = startCli(config, ['logs', 'cli-app', '-f', '--type', 'app']);
    try {
      await waitFor(
        'the printed line in logs -f',
        async () => {
          await app(`/print?marker=${marker}`);
          return follow.output.stdout.includes(`printed ${marker}`);
        },
        30_000,
        500,
      );
    } finally {
      expect(await follow.stop()).toBe(0);
    }
  }, 60_000);

  it("logs --search finds only the matching lines, with the app's own colours kept even when piped", async () => {
    const marker = `search-${Date.now()}`;
    await app(`/print-color?marker=${marker}`);
    await app(`/print?marker=${marker}-plain`);
    const found = await waitFor(
      'the lines in the log store',
      async () => {
        const res = await cli(['logs', 'cli-app', '--since', '5m', '--search', `green ${marker}`]);
        return res.stdout.includes(marker) && res;
      },
      20_000,
      500,
    );
    expect(found.stdout).toContain(`\x1b[32mgreen ${marker}\x1b[0m`);
    expect(found.stdout).not.toContain(`${marker}-plain`);
    expect(found.stdout.trim().split('\n')).toHaveLength(1);
  });

  it('imports a .env file and redeploys: the app sees the values', async () => {
    const envFile = path.join(home, 'prod.env');
    writeFileSync(envFile, '# from the team vault\nGREETING="hello from .env"\nexport SECRET=s3cr3t\n');
    const res = await cli(['env', 'import', envFile, '--service', 'cli-app', '--deploy']);
    expect(res.code, res.stderr).toBe(0);
    const deployId = /Deploying cli-app: (dep-\S+)/.exec(res.stderr)?.[1];
    expect(deployId).toBeDefined();
    await waitFor(
      'the redeploy to go live',
      async () => JSON.parse((await cli(['deploys', 'show', deployId!, 'cli-app', '--json'])).stdout).status === 'live',
      120_000,
      1000,
    );
    expect((await app()).env).toEqual({ GREETING: 'hello from .env', SECRET: 's3cr3t' });
    const listed = JSON.parse((await cli(['env', 'ls', '--service', 'cli-app', '--json'])).stdout);
    expect(listed.map((v: { key: string }) => v.key).sort()).toEqual(['GREETING', 'SECRET']);
  }, 180_000);
});

describe('slipway domains, db, blueprint and completion', () => {
  it('domains add shows the DNS records to create; ls --json lists the domain unverified', async () => {
    const added = await cli(['domains', 'add', 'app.cli-test.example', '--service', 'cli-app']);
    expect(added.code, added.stderr).toBe(0);
    expect(added.stdout).toMatch(/TYPE\s+NAME\s+VALUE/);
    expect(added.stdout).toMatch(/CNAME|A\s/);
    const listed = JSON.parse((await cli(['domains', 'ls', '--service', 'cli-app', '--json'])).stdout);
    expect(listed).toContainEqual(
      expect.objectContaining({ name: 'app.cli-test.example', verificationStatus: 'unverified' }),
    );
  });

  it('db connect opens redis-cli on a new key-value store without printing its password', async () => {
    const created = await cli(['db', 'create', 'key-value', 'cli-cache', '--json']);
    expect(created.code, created.stderr).toBe(0);
    const id = JSON.parse(created.stdout).id;
    await waitFor(
      'the key-value store to be available',
      async () =>
        JSON.parse((await cli(['db', 'ls', '--json'])).stdout).find((d: { id: string }) => d.id === id)?.status ===
        'available',
      60_000,
      500,
    );
    const session = await cli(['db', 'connect', 'cli-cache'], { input: 'SET greeting from-the-cli\nGET greeting\n' });
    expect(session.code, session.stderr).toBe(0);
    expect(session.stdout).toContain('from-the-cli');
    const info = JSON.parse((await cli(['api', 'GET', `/v1/key-value/${id}/connection-info`])).stdout);
    const password = decodeURIComponent(new URL(info.externalConnectionString).password);
    expect(password.length).toBeGreaterThan(8);
    expect(session.stdout + session.stderr).not.toContain(password);
  }, 90_000);

  it("blueprint validate shows a broken render.yaml's errors at file:line:column and exits 2", async () => {
    const dir = mkdtempSync(path.join(home, 'bp-'));
    writeFileSync(
      path.join(dir, 'render.yaml'),
      'services:\n  - type: web\n    name: api\n    plan: enormous\n    runtime: node\n    startCommand: node server.js\n',
    );
    const res = await cli(['blueprint', 'validate'], { cwd: dir });
    expect(res.code).toBe(2);
    expect(res.stdout).toMatch(/^render\.yaml:4:\d+: .*plan/m);
  });

  it('blueprint apply creates a blueprint from a directory and syncs it; the service it declares goes live', async () => {
    const dir = path.join(home, 'bp-app');
    cpSync(path.join(FIXTURES, 'cli-app'), dir, { recursive: true });
    writeFileSync(path.join(dir, 'VERSION'), 'from-blueprint');
    writeFileSync(
      path.join(dir, 'render.yaml'),
      'services:\n  - type: web\n    name: cli-bp-web\n    runtime: node\n    plan: free\n' +
        '    buildCommand: "true"\n    startCommand: node server.js\n    healthCheckPath: /healthz\n',
    );
    const res = await cli(['blueprint', 'apply', dir], { timeoutMs: 120_000 });
    expect(res.code, res.stderr).toBe(0);
    expect(res.stdout).toMatch(/service\s+cli-bp-web\s+created\s+dep-/);
    await waitFor(
      "the blueprint's service to answer",
      async () => (await viaRouter(server.slipway.routerPort, 'cli-bp-web', '/')).json().version === 'from-blueprint',
      60_000,
      500,
    );
  }, 120_000);

  it('completion bash completes commands and subcommands', async () => {
    const script = (await cli(['completion', 'bash'])).stdout;
    const complete = (words: string[]) =>
      new Promise<string>((resolve) => {
        const program = `${script}\nCOMP_WORDS=(${words.map((w) => `'${w}'`).join(' ')}); COMP_CWORD=${words.length - 1}; _slipway; echo "\${COMPREPLY[@]}"`;
        const child = spawn('bash', ['-c', program]);
        let out = '';
        child.stdout.on('data', (chunk: Buffer) => (out += chunk));
        child.on('close', () => resolve(out.trim()));
      });
    expect(await complete(['slipway', 'dep'])).toBe('deploy deploys');
    expect(await complete(['slipway', 'logs', 'cli-app', '--fo'])).toBe('--follow');
  });
});

describe('output conventions', () => {
  it('colours tables on a terminal only: not with NO_COLOR, not when piped', async () => {
    const tty = await runCliInTerminal(config, ['services', 'ls']);
    expect(tty.stdout).toContain('cli-app');
    expect(tty.stdout).toContain(ESC);
    const noColor = await runCliInTerminal(config, ['services', 'ls'], { env: { NO_COLOR: '1' } });
    expect(noColor.stdout).toContain('cli-app');
    expect(noColor.stdout).not.toContain(ESC);
    const piped = await cli(['services', 'ls']);
    expect(piped.stdout).toMatch(/^NAME\s+ID\s+TYPE/);
    expect(piped.stdout + piped.stderr).not.toContain(ESC);
  });

  it('api calls any route with the stored credential; an unknown id exits 4 with a hint', async () => {
    const list = await cli(['api', 'GET', '/v1/services', '-q', 'name=cli-app']);
    expect(JSON.parse(list.stdout)[0].service.name).toBe('cli-app');
    const missing = await cli(['api', 'GET', '/v1/services/srv-doesnotexist000000']);
    expect(missing.code).toBe(4);
    expect(missing.stderr).toContain('Hint:');
  });

  it('a usage error exits 2 and --help exits 0', async () => {
    expect((await cli(['deploys', 'rollback', '--bogus'])).code).toBe(2);
    const help = await cli(['deploy', '--help']);
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('.slipwayignore');
  });
});

describe('slipway logs -f across a restart of Slipway', () => {
  it('reconnects after the last line it received: each line once, the ones printed while Slipway was down too', async () => {
    const follow = startCli(config, ['logs', 'cli-app', '-f', '--type', 'app']);
    const tag = `restart-${Date.now()}`;
    const seen = (n: number) => follow.output.stdout.split(`printed ${tag}-${n}\n`).length - 1;
    try {
      await waitFor(
        'logs -f to be streaming',
        async () => {
          await app(`/print?marker=${tag}-warm`);
          return follow.output.stdout.includes(`printed ${tag}-warm`);
        },
        30_000,
        500,
      );
      await app(`/print?marker=${tag}-1`);
      await waitFor('the line before the restart', async () => seen(1) === 1, 15_000);
      const port = new URL(server.url).port;
      await server.stop(); // the app and the router keep serving
      await app(`/print?marker=${tag}-2`);
      server = await bootServer({ SLIPWAY_PORT: port }, { dataDir: server.dataDir, databaseUrl: server.databaseUrl });
      await app(`/print?marker=${tag}-3`);
      await waitFor('the lines after the restart', async () => seen(2) >= 1 && seen(3) >= 1, 30_000);
      await new Promise((resolve) => setTimeout(resolve, 1000)); // a repeat would show by now
      expect([seen(1), seen(2), seen(3)]).toEqual([1, 1, 1]);
    } finally {
      await follow.stop();
    }
  }, 120_000);
});
