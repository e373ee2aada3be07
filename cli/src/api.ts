import createClient, { type Client } from 'openapi-fetch';
import type { Context } from './contexts.js';
import { CliError, EXIT } from './errors.js';
import type { paths } from '../../openapi/schema.js';

/** Slipway's API, typed from its OpenAPI document: a route's change that breaks a command fails the type check. */
export type Api = Client<paths>;

export const USER_AGENT = 'slipway-cli/0.1.0';

/** The credential as headers; X-Requested-With lets a session cookie write (Slipway's CSRF rule, docs/api.md). */
export function authHeaders(context: Pick<Context, 'apiKey' | 'session'>): Record<string, string> {
  const headers: Record<string, string> = { 'user-agent': USER_AGENT, 'x-requested-with': 'slipway-cli' };
  if (context.apiKey) headers.authorization = `Bearer ${context.apiKey}`;
  else if (context.session) headers.cookie = `slipway_session=${context.session}`;
  return headers;
}

export const baseUrl = (context: Pick<Context, 'url'>) => context.url.replace(/\/+$/, '');

export function connect(context: Context): Api {
  // A failed connection names the URL it tried (exit code 6), wherever the call was made.
  const reach = async (request: Request) =>
    fetch(request).catch((err: unknown) => Promise.reject(unreachable(context.url, err)));
  return createClient<paths>({ baseUrl: baseUrl(context), headers: authHeaders(context), fetch: reach });
}

const HINTS: Record<number, string> = {
  401: 'sign in again: slipway login (or check SLIPWAY_API_KEY)',
  403: 'your role in this workspace may not do this',
  404: "check the name or id: another workspace's resources are not found",
  429: 'too many requests: wait and try again',
};

/** The API's error body ({code, message}) as a CliError whose exit code says what kind of failure it was. */
export function apiError(status: number, body: unknown): CliError {
  const message =
    body && typeof body === 'object' && 'message' in body ? String(body.message) : `HTTP ${status} from Slipway`;
  const code = status === 401 || status === 403 ? EXIT.AUTH : status === 404 ? EXIT.NOT_FOUND : EXIT.ERROR;
  return new CliError(message, code, HINTS[status]);
}

/** A failed connection (not an HTTP answer) as a CliError naming the URL. */
export function unreachable(url: string, err: unknown): CliError {
  const cause = (err as { cause?: { code?: string; message?: string } }).cause;
  const why = cause?.code ?? cause?.message ?? (err as Error).message;
  return new CliError(
    `cannot reach ${url}: ${why}`,
    EXIT.UNREACHABLE,
    'is Slipway running there? the contexts and their URLs: slipway contexts ls',
  );
}

type Result = { data?: unknown; error?: unknown; response: Response };

/** The body of a successful answer; throws the API's error otherwise. */
export async function ok<R extends Result>(pending: Promise<R>): Promise<NonNullable<R['data']>> {
  const result = await pending;
  if (!result.response.ok) throw apiError(result.response.status, result.error);
  return result.data as NonNullable<R['data']>;
}

/**
 * A call outside the typed client (a raw or multipart body; any route for `slipway api`), with the context's
 * credential. A failed connection names the URL, unless `local` says the fault was this machine's (a file it could
 * not pack); the API's error is thrown. Answers the text and, when it is JSON, the body.
 */
export async function request(
  context: Context,
  route: string,
  init: RequestInit & { duplex?: 'half' },
  local?: () => CliError | undefined,
): Promise<{ text: string; body: unknown }> {
  let response: Response;
  try {
    response = await fetch(baseUrl(context) + route, {
      ...init,
      headers: { ...authHeaders(context), ...(init.headers as Record<string, string> | undefined) },
    });
  } catch (err) {
    throw local?.() ?? unreachable(context.url, err);
  }
  const text = await response.text();
  let body: unknown;
  try {
    body = text ? JSON.parse(text) : undefined;
  } catch {
    body = undefined; // not JSON (a metrics page, a file)
  }
  if (!response.ok) throw apiError(response.status, body);
  return { text, body };
}
