import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import type { CreateOptions } from './commands/services.js';

/** Render's blueprint service types, as the API's. */
const BLUEPRINT_TYPES: Record<string, string> = {
  web: 'web_service',
  pserv: 'private_service',
  worker: 'background_worker',
  cron: 'cron_job',
};

/** What a first deploy creates, read from a render.yaml in the directory: its service of that name, or its only one. */
async function fromBlueprint(dir: string, name: string): Promise<Partial<CreateOptions> | undefined> {
  const file = ['render.yaml', 'render.yml'].map((f) => path.join(dir, f)).find((f) => existsSync(f));
  if (!file) return undefined;
  const { parse } = await import('yaml');
  let doc: { services?: Array<Record<string, unknown>> };
  try {
    doc = parse(readFileSync(file, 'utf8')) ?? {};
  } catch {
    return undefined; // `slipway blueprint validate` says what is wrong with it
  }
  const services = Array.isArray(doc.services) ? doc.services : [];
  const service = services.find((s) => s.name === name) ?? (services.length === 1 ? services[0] : undefined);
  if (!service) return undefined;
  const runtime = String(service.runtime ?? service.env ?? '');
  const text = (key: string) => (typeof service[key] === 'string' ? (service[key] as string) : undefined);
  return {
    type: runtime === 'static' ? 'static_site' : BLUEPRINT_TYPES[String(service.type)],
    runtime: runtime && runtime !== 'static' ? runtime : undefined,
    plan: text('plan'),
    buildCommand: text('buildCommand'),
    startCommand: text('startCommand'),
    healthCheckPath: text('healthCheckPath'),
    publishPath: text('staticPublishPath'),
  };
}

/** The runtime a directory's files show, as Render's native runtimes are chosen. */
const MARKERS: Array<[string, string]> = [
  ['Dockerfile', 'docker'],
  ['package.json', 'node'],
  ['requirements.txt', 'python'],
  ['pyproject.toml', 'python'],
  ['Gemfile', 'ruby'],
  ['go.mod', 'go'],
  ['Cargo.toml', 'rust'],
  ['mix.exs', 'elixir'],
];

export async function guessService(dir: string, name: string): Promise<Partial<CreateOptions>> {
  const blueprint = await fromBlueprint(dir, name);
  if (blueprint) return blueprint;
  const runtime = MARKERS.find(([file]) => existsSync(path.join(dir, file)))?.[1];
  return runtime ? { type: 'web_service', runtime } : {};
}
