import { chmodSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import path from 'node:path';
import { CliError, EXIT } from './errors.js';

/** Where one Slipway is reached and as whom: a URL, a workspace and a credential, as kubectl's and flyctl's contexts. */
export interface Context {
  url: string;
  workspaceId?: string;
  /** An API key (slw_…), created by `login` with a password when the role allows, or given with --api-key. */
  apiKey?: string;
  apiKeyId?: string;
  /** A session cookie's value, when the signed-in user may not create API keys (developers and viewers). */
  session?: string;
  email?: string;
}

export interface CliConfig {
  current?: string;
  contexts: Record<string, Context>;
}

export const DEFAULT_URL = 'http://127.0.0.1:8000';

/** $SLIPWAY_CONFIG, else $XDG_CONFIG_HOME/slipway/config.json, else ~/.config/slipway/config.json. */
export function configPath(): string {
  if (process.env.SLIPWAY_CONFIG) return process.env.SLIPWAY_CONFIG;
  const base = process.env.XDG_CONFIG_HOME || path.join(homedir(), '.config');
  return path.join(base, 'slipway', 'config.json');
}

export function loadConfig(): CliConfig {
  try {
    const parsed = JSON.parse(readFileSync(configPath(), 'utf8')) as CliConfig;
    return { current: parsed.current, contexts: parsed.contexts ?? {} };
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return { contexts: {} };
    throw new CliError(`cannot read ${configPath()}: ${(err as Error).message}`, EXIT.USAGE);
  }
}

/** Written whole to a temporary file and renamed over the old one, 0600 from the start: it holds credentials. */
export function saveConfig(config: CliConfig): void {
  const file = configPath();
  mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
  const tmp = `${file}.${process.pid}.tmp`;
  writeFileSync(tmp, JSON.stringify(config, null, 2) + '\n', { mode: 0o600 });
  chmodSync(tmp, 0o600);
  renameSync(tmp, file);
}

/**
 * The context a command runs in: SLIPWAY_API_KEY (with SLIPWAY_URL) wins over the config file, as in CI scripts;
 * then --context, then the current one.
 */
export function resolveContext(name?: string): Context & { name: string } {
  if (process.env.SLIPWAY_API_KEY) {
    return { name: '(environment)', url: process.env.SLIPWAY_URL || DEFAULT_URL, apiKey: process.env.SLIPWAY_API_KEY };
  }
  const config = loadConfig();
  const chosen = name ?? config.current;
  const context = chosen ? config.contexts[chosen] : undefined;
  if (!chosen || !context) {
    throw new CliError(
      chosen ? `no context named ${chosen}` : 'not signed in',
      EXIT.AUTH,
      'run `slipway login`, or set SLIPWAY_API_KEY and SLIPWAY_URL',
    );
  }
  // SLIPWAY_URL goes with SLIPWAY_API_KEY only: a saved credential is never sent to another server.
  return { name: chosen, ...context };
}
