import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { Command } from 'commander';
import { connect, ok, type Api } from './api.js';
import { resolveContext, type Context } from './contexts.js';
import { CliError, EXIT } from './errors.js';

export interface Session {
  context: Context & { name: string };
  api: Api;
}

/** The context named by the global --context (or the current one) and a client for it. */
export function session(command: Command): Session {
  const context = resolveContext(command.optsWithGlobals().context as string | undefined);
  return { context, api: connect(context) };
}

/**
 * A directory's links (`.slipway/service.json`, `.slipway/blueprint.json`), written by its first `slipway deploy` or
 * `slipway blueprint apply`, as Vercel's `.vercel/`: later runs there need no name. Only for the same Slipway.
 */
interface Link {
  url: string;
  id: string;
}

const linkFile = (dir: string, kind: LinkKind) => path.join(dir, '.slipway', `${kind}.json`);
type LinkKind = 'service' | 'blueprint';

export function readLink(dir: string, context: Context, kind: LinkKind = 'service'): string | undefined {
  if (!existsSync(linkFile(dir, kind))) return undefined;
  try {
    const link = JSON.parse(readFileSync(linkFile(dir, kind), 'utf8')) as Link;
    return link.url === context.url && typeof link.id === 'string' ? link.id : undefined;
  } catch {
    return undefined; // a damaged link is as none: the next deploy writes it again
  }
}

export function writeLink(dir: string, context: Context, id: string, kind: LinkKind = 'service'): void {
  mkdirSync(path.join(dir, '.slipway'), { recursive: true });
  writeFileSync(linkFile(dir, kind), JSON.stringify({ url: context.url, id } satisfies Link, null, 2) + '\n');
}

export type Service = Awaited<ReturnType<typeof getService>>;

async function getService(api: Api, serviceId: string) {
  return ok(api.GET('/v1/services/{serviceId}', { params: { path: { serviceId } } }));
}

/** A service by id (srv-…) or by name in the context's workspace; none given: the one this directory is linked to. */
export async function findService({ api, context }: Session, ref: string | undefined): Promise<Service> {
  if (!ref) {
    const linked = readLink(process.cwd(), context);
    if (!linked)
      throw new CliError('which service?', EXIT.USAGE, 'name one (by name or id), or run this in a deployed directory');
    return getService(api, linked);
  }
  if (/^srv-[a-z0-9]+$/.test(ref)) return getService(api, ref);
  const found = await findServiceByName({ api, context }, ref);
  if (!found) throw new CliError(`no service named ${ref}`, EXIT.NOT_FOUND, 'see `slipway services ls`');
  return found;
}

export async function findServiceByName({ api, context }: Session, name: string): Promise<Service | undefined> {
  const ownerId = context.workspaceId ? [context.workspaceId] : undefined;
  const list = await ok(api.GET('/v1/services', { params: { query: { name: [name], ownerId, limit: 100 } } }));
  return list.map((item) => item.service).find((service) => service.name === name);
}

/** `-s, --service`, for the commands whose other arguments are not the service (env, domains). */
export const withServiceOption = (command: Command) =>
  command.option('-s, --service <service>', "the service (name or id; default: this directory's)");

/** Render's terminal deploy statuses: the deploy will not change any more. */
export const DONE = new Set(['live', 'deactivated', 'build_failed', 'update_failed', 'canceled', 'pre_deploy_failed']);
