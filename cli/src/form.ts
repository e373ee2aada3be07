import { request } from './api.js';
import type { Context } from './contexts.js';

/**
 * A multipart POST (fields first, then the file, as Slipway reads them), for the routes that take a file beside
 * fields: blueprints. The typed client models JSON bodies only.
 */
export async function postForm<T>(
  context: Context,
  route: string,
  fields: Record<string, string | undefined>,
  file: { blob: Blob; name: string },
): Promise<T> {
  const form = new FormData();
  for (const [name, value] of Object.entries(fields)) if (value !== undefined) form.append(name, value);
  form.append('file', file.blob, file.name);
  const { body } = await request(context, route, { method: 'POST', body: form });
  return body as T;
}
