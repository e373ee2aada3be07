import { randomBytes } from 'node:crypto';
import {
  existsSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
  writeSync,
  closeSync,
  fstatSync,
} from 'node:fs';
import path from 'node:path';
import { bridgeName, FIRST_HOST, LAST_HOST, SUBNETS, type Supernet } from './plan.js';

/**
 * Who holds which subnet and address, as files under a machine-wide state dir (/run/slipway/net), so that several
 * Slipways on one machine (a test suite's servers) never hand out the same subnet, and a restarted Slipway finds
 * the namespaces its running instances live in:
 *   <subnet>/claim.json         {owner, workspaceId, bridge}: created with mkdir, so exactly one claimant wins
 *   <subnet>/leases/<host>.json {id, hostnames, slirp, netns}: one per namespace on that subnet
 *   <subnet>/hosts              the /etc/hosts its namespaces see
 *   builds/<name>.json          {owner, slirp}: a build's namespace, removed with the build
 */
export interface Claim {
  owner: string;
  workspaceId: string;
  /** Its bridge (plan.bridgeName); none in a claim made before names carried the range (plan.legacyBridgeName). */
  bridge?: string;
}
export interface ProcessRef {
  pid: number;
  startTime: string;
}
export interface Lease {
  id: string;
  /** instance: an app's, with a way out; server: a datastore server's, reachable on the private network only. */
  kind: LeaseKind;
  hostnames: string[];
  slirp?: ProcessRef;
  /** Its namespace (plan.instanceNetns); none in a lease made before names carried the range (plan.legacyNetns). */
  netns?: string;
  /** A server's only ways out (its backups' S3 endpoint), as addresses seen from the namespace. */
  exits?: Exit[];
}
/** One address and TCP port a namespace may connect to through slirp4netns, and nothing else there. */
export interface Exit {
  address: string;
  port: number;
}
export type LeaseKind = 'instance' | 'server';

const readJson = <T>(file: string): T | undefined => {
  try {
    return JSON.parse(readFileSync(file, 'utf8')) as T;
  } catch {
    return undefined;
  }
};

export function createLeaseFiles(stateDir: string, net: Supernet) {
  const subnetDir = (subnet: number) => path.join(stateDir, String(subnet));
  const leaseFile = (subnet: number, host: number) => path.join(subnetDir(subnet), 'leases', `${host}.json`);
  const buildsDir = path.join(stateDir, 'builds');

  return {
    hostsPath: (subnet: number) => path.join(subnetDir(subnet), 'hosts'),
    slirpLog: (subnet: number, host: number) => path.join(subnetDir(subnet), 'leases', `${host}.slirp.log`),
    buildsDir,

    claimOf: (subnet: number) => readJson<Claim>(path.join(subnetDir(subnet), 'claim.json')),

    /** Claims the first free subnet for the workspace, naming its bridge; undefined when all are taken. */
    claim(claim: Omit<Claim, 'bridge'>): number | undefined {
      mkdirSync(stateDir, { recursive: true, mode: 0o700 });
      for (let subnet = 0; subnet < SUBNETS; subnet++) {
        try {
          mkdirSync(subnetDir(subnet));
        } catch {
          continue; // someone holds it
        }
        mkdirSync(path.join(subnetDir(subnet), 'leases'));
        const named: Claim = { ...claim, bridge: bridgeName(net, subnet) };
        writeFileSync(path.join(subnetDir(subnet), 'claim.json'), JSON.stringify(named));
        return subnet;
      }
      return undefined;
    },
    unclaim: (subnet: number) => rmSync(subnetDir(subnet), { recursive: true, force: true }),

    /** Every subnet whose claim is this owner's, with its leases. */
    owned(owner: string): Array<{ subnet: number; claim: Claim; leases: Map<number, Lease> }> {
      const found = [];
      for (const name of safeList(stateDir)) {
        if (!/^\d+$/.test(name)) continue;
        const subnet = Number(name);
        const claim = readJson<Claim>(path.join(subnetDir(subnet), 'claim.json'));
        if (claim?.owner !== owner) continue;
        const leases = new Map<number, Lease>();
        for (const file of safeList(path.join(subnetDir(subnet), 'leases'))) {
          const m = /^(\d+)\.json$/.exec(file);
          const lease = m ? readJson<Lease>(path.join(subnetDir(subnet), 'leases', file)) : undefined;
          if (m && lease) leases.set(Number(m[1]), lease);
        }
        found.push({ subnet, claim, leases });
      }
      return found;
    },

    writeLease: (subnet: number, host: number, lease: Lease) =>
      writeFileSync(leaseFile(subnet, host), JSON.stringify(lease)),
    removeLease(subnet: number, host: number) {
      rmSync(leaseFile(subnet, host), { force: true });
      rmSync(path.join(subnetDir(subnet), 'leases', `${host}.slirp.log`), { force: true });
    },

    /**
     * Rewrites the hosts file in place: it is bind-mounted into running sandboxes, which would keep seeing the old
     * inode after a rename. One write at offset 0, padded with blanks over any longer old text, so a reader never
     * finds it empty or cut mid-line.
     */
    writeHosts(subnet: number, text: string) {
      // r+, not a+: with O_APPEND every write lands at the end, whatever its position.
      const file = path.join(subnetDir(subnet), 'hosts');
      const fd = openSync(file, existsSync(file) ? 'r+' : 'w');
      try {
        const old = fstatSync(fd).size;
        const padded = text.length < old ? text + ' '.repeat(old - text.length) : text;
        writeSync(fd, padded, 0);
      } finally {
        closeSync(fd);
      }
    },

    /** The namespaces' resolv.conf (one for all): written anew, renamed over, at every start. */
    writeResolvConf(text: string): string {
      mkdirSync(stateDir, { recursive: true, mode: 0o700 });
      const file = path.join(stateDir, 'resolv.conf');
      // Unchanged, it is left alone: a rename would unlink the file another Slipway's container start has just opened
      // to mount (runc then fails with "no such file or directory").
      if (existsSync(file) && readFileSync(file, 'utf8') === text) return file;
      // Several Slipways on one machine write it at start: each through a name of its own, then one atomic rename.
      const temp = `${file}.${process.pid}.${randomBytes(4).toString('hex')}`;
      writeFileSync(temp, text, { mode: 0o644 });
      renameSync(temp, file);
      return file;
    },

    writeBuild: (name: string, owner: string, slirp?: ProcessRef) => {
      mkdirSync(buildsDir, { recursive: true, mode: 0o700 });
      writeFileSync(path.join(buildsDir, `${name}.json`), JSON.stringify({ owner, slirp }));
    },
    removeBuild(name: string) {
      rmSync(path.join(buildsDir, `${name}.json`), { force: true });
      rmSync(path.join(buildsDir, `${name}.slirp.log`), { force: true });
    },
    ownedBuilds: (owner: string) =>
      safeList(buildsDir)
        .filter((f) => f.endsWith('.json'))
        .map((f) => ({
          name: f.slice(0, -5),
          ...readJson<{ owner: string; slirp?: ProcessRef }>(path.join(buildsDir, f)),
        }))
        .filter((b) => b.owner === owner),
  };
}
export type LeaseFiles = ReturnType<typeof createLeaseFiles>;

/** The next free host number after `last`, round robin: a just-released address is the last to be handed out again. */
export function nextHost(taken: Set<number>, last: number): number | undefined {
  const span = LAST_HOST - FIRST_HOST + 1;
  for (let i = 1; i <= span; i++) {
    const host = FIRST_HOST + ((last - FIRST_HOST + i + span) % span);
    if (!taken.has(host)) return host;
  }
  return undefined;
}

function safeList(dir: string): string[] {
  try {
    return readdirSync(dir);
  } catch {
    return [];
  }
}
