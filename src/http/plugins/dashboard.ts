import fastifyStatic from '@fastify/static';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { PACKAGE_ROOT } from '../../lib/paths.js';

/** Where `npm install` (the root's prepare) builds web/: hashed assets under assets/, precompressed beside each file. */
export const DASHBOARD_DIR = path.join(PACKAGE_ROOT, 'web', 'dist');

/**
 * The dashboard's Content-Security-Policy: its own scripts, styles and API only (no inline script or style element;
 * React and uPlot set styles through the DOM, which `style-src` does not govern), never framed.
 */
export const DASHBOARD_CSP = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "frame-ancestors 'none'",
  "form-action 'self'",
].join('; ');

function pageHeaders(reply: FastifyReply, file: string) {
  // Hashed names change with their content: cached for a year. The page itself is asked for again each time.
  const hashed = file.includes(`${path.sep}assets${path.sep}`);
  void reply.headers({
    'cache-control': hashed ? 'public, max-age=31536000, immutable' : 'no-cache',
    'content-security-policy': DASHBOARD_CSP,
    'x-content-type-options': 'nosniff',
    'referrer-policy': 'same-origin',
  });
}

/** A page the browser navigates to (not an API call, not a file): the dashboard's routes are client-side. */
const isPageRequest = (request: FastifyRequest) =>
  (request.method === 'GET' || request.method === 'HEAD') &&
  !/^\/(v1|api)(\/|$)/.test(request.url) &&
  String(request.headers.accept ?? '').includes('text/html');

/**
 * Serves the built dashboard at / on the API's listener (same origin, so the session cookie signs it in). Returns the
 * fallback that answers a deep link (/services/srv-…, a dashboardUrl) with the app's page, or nothing when the
 * dashboard was not built.
 */
export async function registerDashboard(app: FastifyInstance, dir = DASHBOARD_DIR) {
  if (!existsSync(path.join(dir, 'index.html'))) return undefined;
  await app.register(fastifyStatic, {
    root: dir,
    prefix: '/',
    wildcard: false, // a route per built file; any other path falls through to the fallback below
    index: false,
    preCompressed: true,
    setHeaders: pageHeaders,
  });
  return (request: FastifyRequest, reply: FastifyReply): boolean => {
    if (!isPageRequest(request)) return false;
    void reply.sendFile('index.html');
    return true;
  };
}
