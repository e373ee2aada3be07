import { readFileSync } from 'node:fs';
import type { Command } from 'commander';
import { baseUrl, request } from '../api.js';
import { CliError, EXIT } from '../errors.js';
import { print } from '../output.js';
import { readStdin } from '../prompt.js';
import { session } from '../session.js';

const METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'];

/** A raw call with the context's credential, as `gh api`: the body from -d, a file (-d @file) or stdin (-d @-). */
export function apiCommand(program: Command): void {
  program
    .command('api <method> <path>')
    .description('Call any route with the stored credential and print the answer (as `gh api`)')
    .option('-d, --data <json>', 'a JSON body; @file reads it from a file, @- from stdin')
    .option('-q, --query <key=value>', 'a query parameter (repeatable)', (v: string, p: string[] = []) => [...p, v])
    .action(async (method: string, route: string, options: { data?: string; query?: string[] }, command: Command) => {
      const verb = method.toUpperCase();
      if (!METHODS.includes(verb)) throw new CliError(`method must be one of ${METHODS.join(', ')}`, EXIT.USAGE);
      if (!route.startsWith('/')) throw new CliError('the path starts with / (for example /v1/services)', EXIT.USAGE);
      const { context } = session(command);
      const url = new URL(baseUrl(context) + route);
      for (const pair of options.query ?? []) {
        const at = pair.indexOf('=');
        url.searchParams.append(at < 0 ? pair : pair.slice(0, at), at < 0 ? '' : pair.slice(at + 1));
      }
      const data = options.data === undefined ? undefined : await readBody(options.data);
      const { text, body } = await request(context, url.pathname + url.search, {
        method: verb,
        headers: data !== undefined ? { 'content-type': 'application/json' } : {},
        body: data,
      });
      if (text) print(body === undefined ? text : JSON.stringify(body, null, 2));
    });
}

async function readBody(data: string): Promise<string> {
  let text: string;
  try {
    text = data === '@-' ? await readStdin() : data.startsWith('@') ? readFileSync(data.slice(1), 'utf8') : data;
  } catch (error) {
    throw new CliError(`cannot read ${data.slice(1)}: ${(error as Error).message}`, EXIT.USAGE);
  }
  try {
    JSON.parse(text);
  } catch {
    throw new CliError('the body (-d) is not JSON', EXIT.USAGE);
  }
  return text;
}
