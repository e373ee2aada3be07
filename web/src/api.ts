import createClient from 'openapi-fetch';
import type { paths } from '../../openapi/schema';

/**
 * Slipway's public API, typed from its own OpenAPI document (openapi/schema.d.ts): a route's change that breaks a page
 * fails the type check. Same origin, signed in by the HTTP-only session cookie; the browser's Origin header on writes
 * satisfies Slipway's CSRF rule.
 */
export const api = createClient<paths>({ baseUrl: window.location.origin, credentials: 'same-origin' });

/** The API's error body ({code, message}) as one error type, whose message the pages show as it is. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly code?: string,
  ) {
    super(message);
  }
}

export function apiError(status: number, body: unknown): ApiError {
  const b = (body ?? {}) as { message?: unknown; code?: unknown };
  return new ApiError(
    status,
    typeof b.message === 'string' ? b.message : `HTTP ${status}`,
    typeof b.code === 'string' ? b.code : undefined,
  );
}

/** The data of an answer, or its error thrown: what TanStack Query's functions want. */
export async function ok<T>(call: Promise<{ data?: T; error?: unknown; response: Response }>): Promise<T> {
  const { data, error, response } = await call;
  if (!response.ok) throw apiError(response.status, error);
  return data as T;
}

/** Render's list envelope ([{service, cursor}, …]) unwrapped. */
export const items = <K extends string, R extends Record<K, unknown>>(rows: R[], key: K): Array<R[K]> =>
  rows.map((row) => row[key]);
