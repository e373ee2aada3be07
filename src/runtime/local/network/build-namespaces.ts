import { randomBytes } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { killSlirp, runAll, runQuietly, startSlirp, together } from './commands.js';
import type { EgressFilter } from './egress.js';
import type { LeaseFiles, ProcessRef } from './leases.js';
import * as plan from './plan.js';

export interface BuildNamespace {
  netnsPath: string;
  resolvConf: string;
  release(): Promise<void>;
}

/** Kept ready: a deploy from git clones in one and builds in another (the sandbox of each is its own). */
const SPARES = 2;

/**
 * Builds' namespaces: loopback and a way out (slirp4netns), no bridge, the egress filter (no host, no private range:
 * git runs here too). Two are kept ready, so a deploy's clone and build do not wait for `ip` and slirp4netns; each is
 * used by one build (or one git command) and removed after it.
 */
/** How long after a build a spare is made in its place (see attach). */
const REFILL_DELAY_MS = 1000;

export function createBuildNamespaces(opts: {
  owner: string;
  ipPath: string;
  slirpPath: string;
  net: plan.Supernet;
  files: LeaseFiles;
  resolvConf: string;
  filter?: EgressFilter;
}) {
  const { owner, files } = opts;
  /** Made by this process and not removed yet (the spare and those in use): a sweep leaves them alone. */
  const held = new Set<string>();
  const spares: Array<Promise<BuildNamespace | undefined>> = [];
  /** Released namespaces whose removal (`ip netns del`, their lease files) is still under way; close() waits. */
  const removing = new Set<Promise<void>>();
  let closed = false;

  async function make(): Promise<BuildNamespace> {
    const ns = `slwb-${randomBytes(5).toString('hex')}`;
    held.add(ns);
    files.writeBuild(ns, owner);
    const remove = async (slirp?: ProcessRef) => {
      killSlirp(slirp);
      await runQuietly([plan.netnsDel(opts.ipPath, ns)]);
      files.removeBuild(ns);
      held.delete(ns);
    };
    let slirp: ProcessRef | undefined;
    try {
      const up = plan.isolatedNetns(opts.ipPath, ns, opts.net);
      await runAll([up.host]);
      mkdirSync(files.buildsDir, { recursive: true });
      await together([
        runAll([up.inside]),
        ...(opts.filter ? [runAll([opts.filter.load(plan.netnsPath(ns), 'build')])] : []),
        startSlirp(opts.slirpPath, ns, path.join(files.buildsDir, `${ns}.slirp.log`)).then((ref) => {
          slirp = ref;
          files.writeBuild(ns, owner, ref);
        }),
      ]);
      return { netnsPath: plan.netnsPath(ns), resolvConf: opts.resolvConf, release: () => remove(slirp) };
    } catch (err) {
      await remove(slirp);
      throw err;
    }
  }

  return {
    isHeld: (name: string) => held.has(name),

    /**
     * A ready one if there is one (taken at once, so two builds never share it). More are made when one is released:
     * never beside a build starting, and never for a probe that failed (nothing would remove it).
     */
    async attach(): Promise<BuildNamespace> {
      const ns = (await spares.shift()) ?? (await make());
      return {
        ...ns,
        release: () => {
          // Its way out ends at once (slirp4netns is killed first); the rest of the removal runs off the deploy's path:
          // its build has ended, and nothing else uses a build's namespace.
          const removed = ns.release().finally(() => removing.delete(removed));
          removing.add(removed);
          // A moment later: the deploy whose build just ended is copying its artifact and starting its instances, and
          // making a namespace (ip, nft, slirp4netns) would compete with them for the CPU. A failure shows on the next
          // build's make().
          setTimeout(() => {
            while (!closed && spares.length < SPARES) spares.push(make().catch(() => undefined));
          }, REFILL_DELAY_MS).unref();
          return Promise.resolve();
        },
      };
    },

    /**
     * Proves a build namespace can be made here (the whole way: netns, filter, slirp4netns), and keeps it as the first
     * spare: the start makes one namespace, not one to throw away and two more. The error's message if it cannot.
     */
    async probe(): Promise<string | undefined> {
      try {
        spares.push(Promise.resolve(await make()));
        return undefined;
      } catch (err) {
        return (err as Error).message;
      }
    },

    async close(): Promise<void> {
      closed = true;
      const ready = spares.splice(0);
      for (const ns of ready) await (await ns)?.release();
      await Promise.all(removing);
    },
  };
}
