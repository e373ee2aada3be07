/** A static site's header rule (Render's `headers`): `name: value` on responses for paths matching `path`. */
export interface HeaderRule {
  path: string;
  name: string;
  value: string;
}
/** A static site's redirect or rewrite rule (Render's `routes`), applied in order when no file has the path. */
export interface RouteRule {
  type: 'redirect' | 'rewrite';
  source: string;
  destination: string;
}
/** Both, as stored in the service's details and compiled by the router (router/static-rules.ts). */
export interface StaticRules {
  headers: HeaderRule[];
  routes: RouteRule[];
}
