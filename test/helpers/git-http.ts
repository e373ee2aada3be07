/** Git's smart HTTP, served by the real `git http-backend` (CGI), for test git servers. */
import { spawn } from 'node:child_process';
import type http from 'node:http';

/**
 * Answers `req` (whose whole `body` was read) for `pathInfo` (`/owner/repo.git/info/refs`, …) under `root`, every
 * repository exported.
 */
export function serveGitHttp(
  req: http.IncomingMessage,
  res: http.ServerResponse,
  opts: { root: string; pathInfo: string; query: string; body: Buffer },
) {
  const cgi = spawn('git', ['http-backend'], {
    env: {
      PATH: process.env.PATH,
      GIT_PROJECT_ROOT: opts.root,
      GIT_HTTP_EXPORT_ALL: '1',
      PATH_INFO: opts.pathInfo,
      QUERY_STRING: opts.query,
      REQUEST_METHOD: req.method,
      CONTENT_TYPE: req.headers['content-type'] ?? '',
      CONTENT_LENGTH: String(opts.body.length),
      REMOTE_USER: 'x-access-token',
    },
  });
  const out: Buffer[] = [];
  cgi.stdout.on('data', (c: Buffer) => out.push(c));
  // git http-backend may answer (an error, a client that went away) without reading the whole body: EPIPE here.
  cgi.stdin.on('error', () => undefined);
  cgi.stdin.end(opts.body);
  cgi.on('close', () => {
    const raw = Buffer.concat(out);
    const split = raw.indexOf('\r\n\r\n');
    const head = raw.subarray(0, split).toString().split('\r\n');
    const headers: Record<string, string> = {};
    let status = 200;
    for (const line of head) {
      const [k, ...v] = line.split(':');
      if (k!.toLowerCase() === 'status') status = Number(v.join(':').trim().split(' ')[0]);
      else headers[k!] = v.join(':').trim();
    }
    res.writeHead(status, headers);
    res.end(raw.subarray(split + 4));
  });
}
