import { STATUS_CODES, type ServerResponse } from 'node:http';

/** The router's own answers, for when there is no app to answer for itself. */
const PAGES = {
  noService: {
    status: 404,
    title: 'No service here',
    text: (host: string) => `There is no service at this address (${host}).`,
  },
  noLiveDeploy: {
    status: 503,
    title: 'No live deploy',
    text: (host: string) => `${host} has no live deploy right now. Try again in a few seconds.`,
  },
  suspended: {
    status: 503,
    title: 'Service suspended',
    text: (host: string) => `The service at ${host} is suspended.`,
  },
  maintenance: {
    status: 503,
    title: 'Down for maintenance',
    text: (host: string) => `The service at ${host} is down for maintenance. Please try again later.`,
  },
  badGateway: { status: 502, title: 'Bad gateway', text: (host: string) => `The service at ${host} did not answer.` },
  gatewayTimeout: {
    status: 504,
    title: 'Gateway timeout',
    text: (host: string) => `The service at ${host} did not answer in time.`,
  },
  notFound: { status: 404, title: 'Not found', text: (host: string) => `There is no such page on ${host}.` },
  badRequest: { status: 400, title: 'Bad request', text: (host: string) => `${host} cannot serve this address.` },
  methodNotAllowed: {
    status: 405,
    title: 'Method not allowed',
    text: (host: string) => `${host} is a static site: only GET and HEAD are allowed.`,
  },
  internalError: {
    status: 500,
    title: 'Router error',
    text: (host: string) => `The router failed while handling a request for ${host}.`,
  },
} as const;

export type PageKind = keyof typeof PAGES;

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

function renderPage(kind: PageKind, host: string): { status: number; body: string } {
  const page = PAGES[kind];
  const body = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${page.status} ${page.title}</title>
<style>body{font-family:system-ui,sans-serif;max-width:36rem;margin:15vh auto;padding:0 1rem;color:#222}h1{font-size:1.4rem}p{color:#555}</style>
</head><body><h1>${page.title}</h1><p>${escapeHtml(page.text(host || 'this address'))}</p></body></html>
`;
  return { status: page.status, body };
}

/** Answers with a page; a response already under way can only be cut off, so the client sees it is incomplete. */
export function sendPage(res: ServerResponse, kind: PageKind, host: string): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  const { status, body } = renderPage(kind, host);
  res.writeHead(status, {
    'content-type': 'text/html; charset=utf-8',
    'content-length': Buffer.byteLength(body),
    // Error pages are about this moment: a cache must not keep serving them after the app is back.
    'cache-control': 'no-store',
    ...(kind === 'noLiveDeploy' ? { 'retry-after': '5' } : {}),
  });
  res.end(body);
}

/** The same page as a raw HTTP/1.1 response, for upgrade requests that get a socket instead of a response object. */
export function rawPageResponse(kind: PageKind, host: string): { status: number; response: string } {
  const { status, body } = renderPage(kind, host);
  const response =
    `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? ''}\r\n` +
    `Content-Type: text/html; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\nCache-Control: no-store\r\nConnection: close\r\n` +
    (kind === 'noLiveDeploy' ? 'Retry-After: 5\r\n' : '') +
    `\r\n${body}`;
  return { status, response };
}
