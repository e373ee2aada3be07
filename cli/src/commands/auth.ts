import { hostname } from 'node:os';
import type { Command } from 'commander';
import createClient from 'openapi-fetch';
import { apiError, authHeaders, baseUrl, connect, ok, unreachable } from '../api.js';
import { DEFAULT_URL, loadConfig, resolveContext, saveConfig, type Context } from '../contexts.js';
import { CliError, EXIT } from '../errors.js';
import type { paths } from '../../../openapi/schema.js';
import { err, note, out, show, table } from '../output.js';
import { ask, interactive, readSecret, readStdin } from '../prompt.js';
import { session } from '../session.js';

interface LoginOptions {
  url?: string;
  email?: string;
  apiKey?: string;
  passwordStdin?: boolean;
  apiKeyStdin?: boolean;
  workspace?: string;
  name?: string;
}

/** Email and password make a session; from it an API key for this machine (admins and owners), else the session. */
async function signIn(url: string, options: LoginOptions): Promise<Context> {
  const email = options.email ?? (interactive() ? await ask('Email') : '');
  if (!email)
    throw new CliError('an email is needed', EXIT.USAGE, 'slipway login --email you@example.com, or --api-key');
  const password = await readSecret('Password');
  const anonymous = createClient<paths>({ baseUrl: baseUrl({ url }), headers: authHeaders({}) });
  const login = await anonymous.POST('/v1/auth/login', { body: { email, password } }).catch((err: unknown) => {
    throw unreachable(url, err);
  });
  if (!login.data) throw apiError(login.response.status, login.error);
  const { response } = login;
  const cookie = response.headers.getSetCookie().find((c) => c.startsWith('slipway_session='));
  const sessionValue = cookie?.slice('slipway_session='.length).split(';')[0];
  if (!sessionValue) throw new CliError('Slipway answered the sign-in without a session', EXIT.ERROR);
  const signedIn = connect({ url, session: sessionValue });
  const created = await signedIn.POST('/v1/api-keys', {
    body: { name: `slipway-cli on ${hostname()}`.slice(0, 100), ownerId: options.workspace },
  });
  if (created.data) {
    await signedIn.POST('/v1/auth/logout', {});
    const { token, id, ownerId } = created.data;
    return { url, email, apiKey: token, apiKeyId: id, workspaceId: ownerId };
  }
  if (created.response.status !== 403) throw apiError(created.response.status, created.error);
  // A developer or viewer may not create keys: the session is the credential (it expires as a browser's does).
  return { url, email, session: sessionValue, workspaceId: options.workspace };
}

export function authCommands(program: Command): void {
  program
    .command('login')
    .description('Sign in to a Slipway and save it as a context (email and password, or an API key)')
    .option('--url <url>', `Slipway's API URL (default: $SLIPWAY_URL, the current context's, or ${DEFAULT_URL})`)
    .option('--email <email>', 'sign in with this email (the password is asked, or read from stdin)')
    .option('--password-stdin', 'read the password from stdin')
    .option('--api-key <key>', 'sign in with an API key (slw_…), or set $SLIPWAY_API_KEY')
    .option('--api-key-stdin', 'read the API key from stdin (kept out of the shell history and the process list)')
    .option('--workspace <id>', 'the workspace to act in (default: your default workspace)')
    .option('--name <context>', "the context's name (default: the URL's host)")
    .action(async (options: LoginOptions) => {
      const config = loadConfig();
      const current = config.current ? config.contexts[config.current] : undefined;
      const url = (options.url ?? process.env.SLIPWAY_URL ?? current?.url ?? DEFAULT_URL).replace(/\/+$/, '');
      const fromStdin = options.apiKeyStdin ? (await readStdin()).trim() : undefined;
      const apiKey = fromStdin || options.apiKey || (options.email ? undefined : process.env.SLIPWAY_API_KEY);
      const context: Context = apiKey ? { url, apiKey, workspaceId: options.workspace } : await signIn(url, options);
      const user = await ok(connect(context).GET('/v1/users'));
      context.email = user.email;
      const name = options.name ?? new URL(url).host;
      config.contexts[name] = context;
      config.current = name;
      saveConfig(config);
      note(`${out.green('✓')} Signed in to ${url} as ${user.email} (context ${name})`);
    });

  program
    .command('logout')
    .description('Forget the current context (and revoke the API key login created)')
    .action(async (_options, command: Command) => {
      const config = loadConfig();
      const name = (command.optsWithGlobals().context as string | undefined) ?? config.current;
      const context = name ? config.contexts[name] : undefined;
      if (!name || !context) throw new CliError('not signed in', EXIT.AUTH);
      // Forgotten here in any case; a key Slipway could not revoke is named, so that it can be revoked by hand.
      const { apiKeyId } = context;
      const revoked = apiKeyId
        ? await ok(connect(context).DELETE('/v1/api-keys/{apiKeyId}', { params: { path: { apiKeyId } } }))
            .then(() => true)
            .catch(() => false)
        : true;
      if (context.session)
        await connect(context)
          .POST('/v1/auth/logout', {})
          .catch(() => undefined);
      if (!revoked)
        note(err.yellow(`Could not revoke its API key ${apiKeyId}: revoke it with DELETE /v1/api-keys/${apiKeyId}`));
      delete config.contexts[name];
      if (config.current === name) config.current = Object.keys(config.contexts)[0];
      saveConfig(config);
      note(`Signed out of ${context.url} (context ${name})`);
    });

  program
    .command('whoami')
    .description('Show the current context: URL, workspace and user')
    .option('--json', 'print JSON')
    .action(async (options: { json?: boolean }, command: Command) => {
      const { context, api } = session(command);
      const user = await ok(api.GET('/v1/users'));
      const workspaces = await ok(api.GET('/v1/workspaces', { params: { query: { limit: 100 } } }));
      const workspace =
        workspaces.find((w) => w.owner.id === context.workspaceId)?.owner ??
        (context.workspaceId ? undefined : workspaces[0]?.owner);
      const result = {
        context: context.name,
        url: context.url,
        user: { id: user.id, email: user.email, name: user.name },
        workspace: workspace ? { id: workspace.id, name: workspace.name } : { id: context.workspaceId },
        credential: context.apiKey ? 'api key' : 'session',
      };
      show(options.json, result, () =>
        table(
          ['context', 'url', 'user', 'workspace', 'credential'],
          [
            [
              result.context,
              result.url,
              user.email,
              workspace ? `${workspace.name} (${workspace.id})` : String(context.workspaceId),
              result.credential,
            ],
          ],
        ),
      );
    });

  const contexts = program.command('contexts').description('List and switch saved contexts');
  contexts
    .command('ls')
    .description('List saved contexts (* marks the current one)')
    .option('--json', 'print JSON')
    .action((options: { json?: boolean }) => {
      const config = loadConfig();
      const rows = Object.entries(config.contexts).map(([name, c]) => ({
        current: name === config.current,
        name,
        url: c.url,
        email: c.email,
        workspaceId: c.workspaceId,
      }));
      show(options.json, rows, () =>
        table(
          ['', 'name', 'url', 'user', 'workspace'],
          rows.map((r) => [r.current ? '*' : '', r.name, r.url, r.email ?? '', r.workspaceId ?? '']),
        ),
      );
    });
  contexts
    .command('use <name>')
    .description('Make a saved context the current one')
    .action((name: string) => {
      const config = loadConfig();
      if (!config.contexts[name])
        throw new CliError(`no context named ${name}`, EXIT.NOT_FOUND, 'see `slipway contexts ls`');
      config.current = name;
      saveConfig(config);
      resolveContext(name);
      note(`Now using ${name}`);
    });
}
