import type http from 'node:http';

/** Host header → the name resolve() knows: lowercased, without port or trailing dot; IPv6 literals keep their brackets. */
export function hostnameOf(hostHeader: string | undefined): string {
  const host = (hostHeader ?? '').trim().toLowerCase();
  const end = host.startsWith('[') ? host.indexOf(']') + 1 : host.indexOf(':');
  const name = end > 0 ? host.slice(0, end) : host;
  return name.endsWith('.') ? name.slice(0, -1) : name;
}

const ABSOLUTE_FORM = /^[a-z][a-z0-9+.-]*:\/\/([^/?#]*)([^#]*)/i;

/**
 * An absolute-form request target (`GET http://b.localhost/x`, RFC 9112 §3.2.2) names the host itself, and a Host
 * header must be identical to it. Routing by one while the app is handed the other let `GET http://b…/` with
 * `Host: a…` reach B saying it was for A. Here a target in absolute form becomes the origin form (`/x`) the app
 * expects, after its host is checked against Host's (an HTTP/1.0 request without Host gets it as its Host); false
 * when they name different hosts (or the target is in no form a router takes): the caller answers 400. HTTP/2's
 * `:path` is always in origin form.
 */
export function toOriginForm(req: http.IncomingMessage): boolean {
  const url = req.url ?? '/';
  if (url.startsWith('/')) return true;
  const absolute = ABSOLUTE_FORM.exec(url);
  const authority = absolute?.[1];
  if (!absolute || !authority || authority.includes('@')) return false;
  if (req.headers.host === undefined) req.headers.host = authority;
  else if (hostnameOf(req.headers.host) !== hostnameOf(authority)) return false;
  const rest = absolute[2] ?? '';
  req.url = rest.startsWith('/') ? rest : `/${rest}`;
  return true;
}
