import { constants, type Stats } from 'node:fs';
import { open, realpath, type FileHandle } from 'node:fs/promises';
import type { IncomingMessage, ServerResponse } from 'node:http';
import path from 'node:path';
import { pipeline } from 'node:stream';
import { sendPage } from './pages.js';
import type { CompiledRules } from './static-rules.js';

const CONTENT_TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.htm': 'text/html; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.json': 'application/json; charset=utf-8',
  '.txt': 'text/plain; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.jpg': 'image/jpeg',
  '.jpeg': 'image/jpeg',
  '.gif': 'image/gif',
  '.webp': 'image/webp',
  '.ico': 'image/x-icon',
  '.wasm': 'application/wasm',
  '.woff2': 'font/woff2',
};

interface OpenFile {
  handle: FileHandle;
  stats: Stats;
  path: string;
  /** The index.html of the directory the path named. */
  isIndex: boolean;
}

/**
 * Serves the file a GET or HEAD asks for from `root`, never anything outside it. With a site's rules: a path no file
 * has goes through the first matching redirect (301) or rewrite (another file of the site), and header rules add their
 * headers to the answer.
 */
export async function serveStatic(
  req: IncomingMessage,
  res: ServerResponse,
  root: string,
  host: string,
  rules?: CompiledRules,
): Promise<void> {
  if (req.method !== 'GET' && req.method !== 'HEAD') {
    res.setHeader('allow', 'GET, HEAD');
    return sendPage(res, 'methodNotAllowed', host);
  }
  const urlPath = decodeUrlPath(req.url ?? '/');
  if (urlPath === undefined) return sendPage(res, 'badRequest', host);
  const extra = rules?.headersFor(urlPath) ?? [];

  const realRoot = await realpath(root).catch(() => undefined);
  let file = realRoot && (await openInside(realRoot, urlPath));
  if (file && file.isIndex && !urlPath.endsWith('/')) {
    // `/docs` → `/docs/`, as nginx and Render answer: the page's relative links then resolve inside the directory.
    closeQuietly(file.handle);
    const [rawPath, query] = (req.url ?? '/').split(/\?(.*)/s, 2);
    res.statusCode = 301;
    // One leading slash: `//host/dir` must not become a redirect to another site.
    const local = `/${rawPath!.replace(/^[/\\]+/, '')}`;
    res.setHeader('location', `${local}/${query !== undefined ? `?${query}` : ''}`);
    return void res.end();
  }
  const route = file ? undefined : rules?.route(urlPath);
  if (route?.type === 'redirect') {
    for (const [name, value] of extra) res.setHeader(name, value);
    res.statusCode = 301;
    res.setHeader('location', route.destination);
    return void res.end();
  }
  if (route && realRoot) {
    const target = decodeUrlPath(route.destination);
    if (target !== undefined) file = await openInside(realRoot, target);
  }
  if (file) return sendFile(req, res, file, 200, extra);
  const notFoundPage = realRoot && (await openInside(realRoot, '/404.html'));
  if (notFoundPage) return sendFile(req, res, notFoundPage, 404, extra);
  sendPage(res, 'notFound', host);
}

/** The decoded path of a request target, or undefined when it cannot name a file (bad escapes, NUL bytes). */
function decodeUrlPath(url: string): string | undefined {
  if (!url.startsWith('/')) return undefined;
  const rawPath = url.split('?', 1)[0] ?? '/';
  try {
    const decoded = decodeURIComponent(rawPath);
    return decoded.includes('\0') ? undefined : decoded;
  } catch {
    return undefined;
  }
}

function isInside(root: string, candidate: string): boolean {
  return candidate === root || candidate.startsWith(root + path.sep);
}

/**
 * Opens the regular file `urlPath` names under `realRoot` (a directory means its index.html).
 * Checked twice: the lexical path must stay inside the root (`..`), and so must the real path (symlinks).
 */
async function openInside(realRoot: string, urlPath: string, isIndex = false): Promise<OpenFile | undefined> {
  const lexical = path.resolve(realRoot, `.${urlPath}`);
  if (!isInside(realRoot, lexical)) return undefined;
  const real = await realpath(lexical).catch(() => undefined);
  if (!real || !isInside(realRoot, real)) return undefined;
  // O_NOFOLLOW: the real path has no symlinks left, so one appearing since realpath() is refused, not followed.
  const handle = await open(real, constants.O_RDONLY | constants.O_NOFOLLOW).catch(() => undefined);
  if (!handle) return undefined;
  const stats = await handle.stat().catch(() => undefined);
  if (stats?.isFile()) return { handle, stats, path: real, isIndex };
  closeQuietly(handle);
  if (stats?.isDirectory() && !isIndex) return openInside(realRoot, path.posix.join(urlPath, 'index.html'), true);
  return undefined;
}

function closeQuietly(handle: FileHandle): void {
  handle.close().catch(() => {});
}

/** Weak validator: size and mtime change whenever a deploy replaces the file. */
function etagOf(stats: Stats): string {
  return `W/"${stats.size.toString(16)}-${Math.floor(stats.mtimeMs).toString(16)}"`;
}

function matchesIfNoneMatch(header: string | undefined, etag: string): boolean {
  if (!header) return false;
  const opaque = (tag: string) => tag.trim().replace(/^W\//, '');
  return header.split(',').some((tag) => tag.trim() === '*' || opaque(tag) === opaque(etag));
}

/**
 * A file whose name carries a content hash (Vite's `index-BqXk2a9f.js`, Create React App's `main.3f5e1c2a.chunk.css`):
 * a new build gives it a new name, so a browser may keep it a year. The token must hold a digit, so that names such as
 * `react-dom.production.js` are not taken for hashed.
 */
const HASHED =
  /[.-](?=[A-Za-z0-9_-]*\d)[A-Za-z0-9_-]{8,}(\.chunk)?\.(js|mjs|css|map|woff2?|ttf|otf|png|jpe?g|gif|svg|webp|avif|ico)$/i;
const IMMUTABLE = 'public, max-age=31536000, immutable';
/** Everything else is checked again at every use (ETag), so a deploy shows at once. */
const REVALIDATE = 'public, max-age=0, must-revalidate';

function sendFile(
  req: IncomingMessage,
  res: ServerResponse,
  file: OpenFile,
  status: number,
  extra: Array<[string, string]>,
): void {
  const etag = etagOf(file.stats);
  res.setHeader('content-type', CONTENT_TYPES[path.extname(file.path).toLowerCase()] ?? 'application/octet-stream');
  res.setHeader('x-content-type-options', 'nosniff');
  res.setHeader('etag', etag);
  res.setHeader('last-modified', file.stats.mtime.toUTCString());
  res.setHeader('cache-control', status === 200 && HASHED.test(path.basename(file.path)) ? IMMUTABLE : REVALIDATE);
  for (const [name, value] of extra) res.setHeader(name, value); // the site's own rules win

  if (status === 200 && matchesIfNoneMatch(req.headers['if-none-match'], etag)) {
    closeQuietly(file.handle);
    res.statusCode = 304;
    res.end();
    return;
  }
  res.statusCode = status;
  res.setHeader('content-length', file.stats.size);
  if (req.method === 'HEAD') {
    closeQuietly(file.handle);
    res.end();
    return;
  }
  // pipeline closes the file (autoClose) and the response on failure; a client that left is not an error worth reporting.
  pipeline(file.handle.createReadStream(), res, () => {});
}
