import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { createSerial } from '../../../lib/keyed-locks.js';
import { createBuildNamespaces } from './build-namespaces.js';
import * as commands from './commands.js';
import { killSlirp, runAll, runQuietly, together } from './commands.js';
import { givesLinksIPv6, type NetworkTools } from './detect.js';
import { createEgressFilter, type EgressFilter } from './egress.js';
import { createLeaseFiles, nextHost, type Exit, type Lease, type LeaseKind } from './leases.js';
import * as plan from './plan.js';

/** Where an instance's namespace is and how Slipway reaches it. */
export interface Attachment {
  /** The address the router and Slipway's checks connect to (in the namespace, on the workspace's bridge). */
  address: string;
  netnsPath: string;
  /** Bind-mounted at /etc/hosts in the sandbox: the workspace's internal hostnames. */
  hostsFile: string;
  /** Bind-mounted at /etc/resolv.conf: DNS through slirp4netns. */
  resolvConf: string;
  /** A server's ways out, as addresses seen from inside (in the order asked for). */
  exits?: Exit[];
}

export { detectNetworkTools, type NetworkTools } from './detect.js';

export interface Networks {
  /**
   * Gives `id` a namespace on its workspace's network (replacing one it already had), reachable as `hostnames` there.
   * An instance's has a way out (slirp4netns); a datastore server's (`server`) has none, or only to `exits` (addresses
   * of the host's view; 127.0.0.1 is reached through slirp4netns's host alias).
   */
  attach(id: string, workspaceId: string, hostnames: string[], kind?: LeaseKind, exits?: Exit[]): Promise<Attachment>;
  /** A namespace with only a way out, for one build; `release` removes it. */
  attachBuild(): Promise<{ netnsPath: string; resolvConf: string; release(): Promise<void> }>;
  /** Makes a build namespace and keeps it ready for the first build: undefined, or why one cannot be made here. */
  probeBuild(): Promise<string | undefined>;
  /** Removes `id`'s namespace and address (no-op when it has none). */
  release(id: string): Promise<void>;
  addressOf(id: string): string | undefined;
  /**
   * Removes every namespace of `kind` of this Slipway whose id `keep` refuses, and the builds' (after a crash), except
   * when sweeping servers: that runs once deploys have resumed, and their builds' namespaces are in use.
   */
  sweep(keep: (id: string) => boolean, kind?: LeaseKind): Promise<void>;
  /** Removes the spare namespaces made ahead of need (on a graceful stop; instances keep theirs). */
  close(): Promise<void>;
}

export const DEFAULT_STATE_DIR = '/run/slipway/net';
const REFILL_DELAY_MS = 1000;

/**
 * Namespaces per instance and build, a bridge per workspace, slirp4netns per namespace for the way out. Slipway owns
 * every interface it creates here and removes it with the last namespace that needs it; it changes no other setting.
 */
export function createNetworks(opts: {
  owner: string;
  cidr: string;
  tools: NetworkTools;
  /** IPv4 ranges the namespaces with a way out may reach although they are not the internet (SLIPWAY_EGRESS_ALLOW). */
  egressAllow?: string[];
  stateDir?: string;
}): Networks {
  const net = plan.parseSupernet(opts.cidr);
  const { tools, owner } = opts;
  const files = createLeaseFiles(opts.stateDir ?? DEFAULT_STATE_DIR, net);
  const serial = createSerial();
  const filter: EgressFilter | undefined = tools.nft
    ? createEgressFilter({ nsenter: tools.nsenter, nft: tools.nft, net, allow: opts.egressAllow ?? [] })
    : undefined;
  const ipv6 = givesLinksIPv6();
  const resolvConf = files.writeResolvConf(
    plan.slirpResolvConf(existsSync('/etc/resolv.conf') ? readFileSync('/etc/resolv.conf', 'utf8') : ''),
  );
  /** This owner's subnets and what is on them, loaded from the state dir (a restarted Slipway re-adopts them). */
  const subnets = new Map<string, { subnet: number; bridge: string; leases: Map<number, Lease>; last: number }>();
  const byId = new Map<string, { subnet: number; host: number }>();
  for (const { subnet, claim, leases } of files.owned(owner)) {
    const bridge = claim.bridge ?? plan.legacyBridgeName(subnet);
    subnets.set(claim.workspaceId, { subnet, bridge, leases, last: Math.max(plan.FIRST_HOST - 1, ...leases.keys()) });
    for (const [host, lease] of leases) byId.set(lease.id, { subnet, host });
  }
  /** A lease's namespace: named in it, or by the old scheme when an earlier Slipway made it. */
  const netnsOf = (subnet: number, host: number, lease: Lease | undefined) =>
    lease?.netns ?? plan.legacyNetns(subnet, host);
  // What an earlier Slipway made gets what it lacked: the bridge its pinned MAC and no IPv6 address, each namespace
  // the egress filter (with this machine's addresses as they are now). The same again changes nothing. One at a time,
  // in the background: a spawn each, and none is on a request's path.
  const settle = [...subnets.values()].flatMap(({ subnet, bridge, leases }) => [
    plan.settleBridge(tools.ip, net, subnet, bridge, ipv6),
    ...[...leases].flatMap(([host, lease]) =>
      filter ? [filter.load(plan.netnsPath(netnsOf(subnet, host, lease)), lease.kind, subnet, lease.exits)] : [],
    ),
  ]);
  void (async () => {
    for (const cmd of settle) await runQuietly([cmd]);
  })();

  const startSlirp = (ns: string, logPath: string, hostLoopback = false) =>
    commands.startSlirp(tools.slirp4netns, ns, logPath, hostLoopback);
  const builds = createBuildNamespaces({
    owner,
    ipPath: tools.ip,
    slirpPath: tools.slirp4netns,
    net,
    files,
    resolvConf,
    filter,
  });

  function rewriteHosts(subnet: number, leases: Map<number, Lease>) {
    files.writeHosts(
      subnet,
      plan.hostsFile(
        [...leases].map(([host, lease]) => ({
          address: plan.hostAddress(net, subnet, host),
          hostnames: lease.hostnames,
        })),
      ),
    );
  }

  async function subnetFor(workspaceId: string) {
    const known = subnets.get(workspaceId);
    if (known) return known;
    const subnet = files.claim({ owner, workspaceId });
    if (subnet === undefined) throw new Error(`no free subnet in ${net.cidr} for another workspace`);
    const bridge = plan.bridgeName(net, subnet);
    try {
      await runQuietly([plan.linkDel(tools.ip, bridge)]); // left behind by a Slipway that was killed
      await runAll(plan.bridgeUp(tools.ip, net, subnet, bridge, ipv6));
    } catch (err) {
      files.unclaim(subnet);
      throw err;
    }
    const entry = { subnet, bridge, leases: new Map<number, Lease>(), last: plan.FIRST_HOST - 1 };
    subnets.set(workspaceId, entry);
    rewriteHosts(subnet, entry.leases);
    return entry;
  }

  async function releaseLocked(id: string): Promise<void> {
    const at = byId.get(id);
    if (!at) return;
    byId.delete(id);
    const [workspaceId, entry] = [...subnets].find(([, e]) => e.subnet === at.subnet)!;
    const lease = entry.leases.get(at.host);
    killSlirp(lease?.slirp);
    await runQuietly([plan.netnsDel(tools.ip, netnsOf(at.subnet, at.host, lease))]);
    entry.leases.delete(at.host);
    files.removeLease(at.subnet, at.host);
    for (const [ws, spareId] of spares) if (spareId === id) spares.delete(ws);
    const spare = spares.get(workspaceId);
    if (spare && !hasInstances(workspaceId, spare)) return releaseLocked(spare);
    if (hasInstances(workspaceId)) refill(workspaceId);
    if (entry.leases.size > 0) return rewriteHosts(at.subnet, entry.leases);
    await runQuietly([plan.linkDel(tools.ip, entry.bridge)]);
    files.unclaim(at.subnet);
    subnets.delete(workspaceId);
  }

  /** Makes `id`'s namespace on its workspace's bridge (its lease written first, so a failure is swept). */
  async function makeLocked(id: string, workspaceId: string, hostnames: string[], kind: LeaseKind, exits?: Exit[]) {
    const entry = await subnetFor(workspaceId);
    const host = nextHost(new Set(entry.leases.keys()), entry.last);
    if (host === undefined) throw new Error(`workspace ${workspaceId} has no free address left on this machine`);
    const ns = plan.instanceNetns(net, entry.subnet, host);
    const inside = (exits ?? []).map((exit) => ({ address: plan.throughSlirp(exit.address), port: exit.port }));
    const lease: Lease = { id, kind, hostnames, netns: ns, ...(inside.length ? { exits: inside } : {}) };
    entry.last = host;
    entry.leases.set(host, lease);
    byId.set(id, { subnet: entry.subnet, host });
    files.writeLease(entry.subnet, host, lease);
    try {
      // Stale ones of the same names, left by a killed Slipway (a veth outlives its netns's name while a process holds it).
      await runQuietly([plan.netnsDel(tools.ip, ns), plan.linkDel(tools.ip, plan.vethName(net, entry.subnet, host))]);
      const up = plan.instanceUp(tools.ip, net, { subnet: entry.subnet, host, bridge: entry.bridge, ipv6 });
      await runAll([up.host]);
      // Once the namespace exists, its address, its filter and its way out go up side by side: each is a process
      // to wait for. The instance starts only after all three.
      await together([
        runAll([up.inside]),
        ...(filter ? [runAll([filter.load(plan.netnsPath(ns), kind, entry.subnet, lease.exits)])] : []),
        ...(kind === 'instance' || lease.exits
          ? [
              startSlirp(
                ns,
                files.slirpLog(entry.subnet, host),
                inside.some((exit) => exit.address === plan.SLIRP_HOST),
              ).then((slirp) => {
                lease.slirp = slirp;
                files.writeLease(entry.subnet, host, lease);
              }),
            ]
          : []),
      ]);
    } catch (err) {
      await releaseLocked(id);
      throw err;
    }
  }

  /**
   * A workspace that runs instances keeps one ready namespace (with its slirp4netns) for its next one: a deploy's
   * roll-over then takes it instead of waiting ~30-80 ms for `ip` and slirp4netns. Made off the deploy's path (after a
   * release, or a while after an attach); dropped with the workspace's last instance and on close. Never shared: each
   * is taken once, by the workspace it was made on.
   */
  const spares = new Map<string, string>(); // workspaceId -> the spare's lease id
  let closed = false;
  const hasInstances = (workspaceId: string, except?: string) =>
    [...(subnets.get(workspaceId)?.leases.values() ?? [])].some((l) => l.kind === 'instance' && l.id !== except);

  function refill(workspaceId: string) {
    void serial(async () => {
      if (closed || spares.has(workspaceId) || !hasInstances(workspaceId)) return;
      const id = `spare-${randomBytes(5).toString('hex')}`;
      await makeLocked(id, workspaceId, [], 'instance');
      spares.set(workspaceId, id);
    }).catch(() => undefined); // the next attach makes its own, and reports why if that fails too
  }

  /** Hands the workspace's spare to `id`: the same namespace and address, relabelled. */
  function takeSpareLocked(workspaceId: string, id: string, hostnames: string[]): boolean {
    const spareId = spares.get(workspaceId);
    const at = spareId === undefined ? undefined : byId.get(spareId);
    spares.delete(workspaceId);
    const lease = at && subnets.get(workspaceId)?.leases.get(at.host);
    if (!spareId || !at || !lease) return false;
    byId.delete(spareId);
    byId.set(id, at);
    Object.assign(lease, { id, hostnames });
    files.writeLease(at.subnet, at.host, lease);
    return true;
  }

  return {
    attach: (id, workspaceId, hostnames, kind = 'instance', exits) =>
      serial(async () => {
        await releaseLocked(id);
        if (kind !== 'instance' || !takeSpareLocked(workspaceId, id, hostnames))
          await makeLocked(id, workspaceId, hostnames, kind, exits);
        const { subnet, host } = byId.get(id)!;
        const { leases } = subnets.get(workspaceId)!;
        rewriteHosts(subnet, leases);
        // Later, not now: making it would compete for the CPU with the instance starting in this namespace. A roll-over's
        // old instances, released once the new ones are live, make it sooner (releaseLocked).
        if (kind === 'instance') setTimeout(() => refill(workspaceId), REFILL_DELAY_MS).unref();
        const lease = leases.get(host);
        return {
          address: plan.hostAddress(net, subnet, host),
          netnsPath: plan.netnsPath(netnsOf(subnet, host, lease)),
          hostsFile: files.hostsPath(subnet),
          resolvConf,
          ...(lease?.exits ? { exits: lease.exits } : {}),
        };
      }),

    attachBuild: () => builds.attach(),
    probeBuild: () => builds.probe(),

    release: (id) => serial(() => releaseLocked(id)),

    addressOf(id) {
      const at = byId.get(id);
      return at && plan.hostAddress(net, at.subnet, at.host);
    },

    sweep: (keep, kind) =>
      serial(async () => {
        const kindOf = (at: { subnet: number; host: number }) =>
          [...subnets.values()].find((e) => e.subnet === at.subnet)?.leases.get(at.host)?.kind ?? 'instance';
        for (const [id, at] of [...byId])
          if ((kind === undefined || kindOf(at) === kind) && !keep(id)) await releaseLocked(id);
        for (const [workspaceId, entry] of subnets) {
          if (entry.leases.size > 0) continue; // a bridge whose first namespace failed to come up
          await runQuietly([plan.linkDel(tools.ip, entry.bridge)]);
          files.unclaim(entry.subnet);
          subnets.delete(workspaceId);
        }
        for (const build of kind === 'server' ? [] : files.ownedBuilds(owner).filter((b) => !builds.isHeld(b.name))) {
          killSlirp(build.slirp);
          await runQuietly([plan.netnsDel(tools.ip, build.name)]);
          files.removeBuild(build.name);
        }
      }),

    async close() {
      closed = true;
      await builds.close();
      await serial(async () => {
        for (const spareId of [...spares.values()]) await releaseLocked(spareId);
      });
    },
  };
}

/** Removes every namespace, bridge and slirp4netns of the Slipway whose data dir is `dataDir` (tests, after killing its apps). */
export async function removeNetworksOf(
  dataDir: string,
  cidr: string,
  find: (name: string) => string | undefined,
): Promise<void> {
  const tools = { ip: find('ip'), slirp4netns: find('slirp4netns'), nsenter: find('nsenter') };
  if (!tools.ip || !tools.slirp4netns || !tools.nsenter || process.getuid?.() !== 0) return;
  await createNetworks({ owner: path.resolve(dataDir), cidr, tools: tools as NetworkTools }).sweep(() => false);
}
