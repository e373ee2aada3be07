import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { Cgroups, PARENT, type Controller, type Hierarchy } from './cgroups.js';

/** The cgroup2 and v1 mount points, from /proc/self/mounts. */
function cgroupMounts(): { v2: string[]; v1: { root: string; options: string[] }[] } {
  const mounts = { v2: [] as string[], v1: [] as { root: string; options: string[] }[] };
  for (const line of readFileSync('/proc/self/mounts', 'utf8').split('\n')) {
    const [, root, type, options] = line.split(' ');
    if (!root || !options) continue;
    if (type === 'cgroup2') mounts.v2.push(root);
    if (type === 'cgroup') mounts.v1.push({ root, options: options.split(',') });
  }
  return mounts;
}

/** Proves a hierarchy usable by creating, limiting and removing a probe group. */
async function probe(cgroups: Cgroups): Promise<void> {
  const dirs = cgroups.create(`probe-${randomBytes(6).toString('hex')}`, {
    memoryMb: 64,
    cpuMillicores: 500,
    pids: 64,
    diskMb: 64,
  });
  await cgroups.remove(dirs);
}

const errorText = (err: unknown) => (err as Error).message;

async function tryV2(root: string, notes: string[]): Promise<Cgroups | undefined> {
  try {
    const available = readFileSync(path.join(root, 'cgroup.controllers'), 'utf8').trim().split(/\s+/);
    const missing = (['memory', 'cpu'] as const).filter((c) => !available.includes(c));
    if (missing.length > 0) {
      notes.push(
        `cgroup v2 at ${root} does not offer the ${missing.join(' and ')} controller(s) (it has: ${available.join(' ') || 'none'})`,
      );
      return undefined;
    }
    // pids is optional: without it memory and CPU are still limited, and the note says what is not.
    const controllers: Controller[] = available.includes('pids') ? ['memory', 'cpu', 'pids'] : ['memory', 'cpu'];
    if (!controllers.includes('pids'))
      notes.push(
        `process limits are not applied: cgroup v2 at ${root} does not offer the pids controller, so a fork bomb can exhaust all processes of the machine`,
      );
    // Children of a group only get the controllers enabled in its subtree_control.
    const enable = controllers.map((c) => `+${c}`).join(' ');
    writeFileSync(path.join(root, 'cgroup.subtree_control'), enable);
    mkdirSync(path.join(root, PARENT), { recursive: true });
    writeFileSync(path.join(root, PARENT, 'cgroup.subtree_control'), enable);
    const swap = existsSync(path.join(root, PARENT, 'memory.swap.max'));
    if (!swap) notes.push('swap use is not limited: the kernel has no swap accounting (memory.swap.max)');
    const cgroups = new Cgroups('v2', [{ root, controllers, swap }]);
    await probe(cgroups);
    return cgroups;
  } catch (err) {
    notes.push(`cgroup v2 at ${root} is not usable: ${errorText(err)}`);
    return undefined;
  }
}

async function tryV1(mounts: { root: string; options: string[] }[], notes: string[]): Promise<Cgroups | undefined> {
  const hierarchies: Hierarchy[] = [];
  for (const controller of ['memory', 'cpu', 'pids'] as const) {
    const what = controller === 'pids' ? 'process' : controller;
    const mount = mounts.find((m) => m.options.includes(controller));
    if (!mount) {
      notes.push(
        `${what} limits are not applied: no cgroup v1 ${controller} hierarchy is mounted${controller === 'pids' ? ', so a fork bomb can exhaust all processes of the machine' : ''}`,
      );
      continue;
    }
    const swap = controller === 'memory' && existsSync(path.join(mount.root, 'memory.memsw.limit_in_bytes'));
    try {
      await probe(new Cgroups('v1', [{ root: mount.root, controllers: [controller], swap }]));
    } catch (err) {
      notes.push(`${what} limits are not applied: cgroup v1 at ${mount.root} is not writable (${errorText(err)})`);
      continue;
    }
    if (controller === 'memory' && !swap)
      notes.push('swap use is not limited: the kernel has no swap accounting (memory.memsw.*)');
    // Some systems mount several controllers in one hierarchy (e.g. cpu,memory).
    const shared = hierarchies.find((h) => h.root === mount.root);
    if (shared) shared.controllers.push(controller);
    else hierarchies.push({ root: mount.root, controllers: [controller], swap });
  }
  return hierarchies.length > 0 ? new Cgroups('v1', hierarchies) : undefined;
}

/** Finds a writable cgroup setup with memory, cpu and pids controllers (v2 preferred); everything missing goes to `notes`. */
export async function detectCgroups(notes: string[]): Promise<Cgroups | undefined> {
  const mounts = cgroupMounts();
  const v2Notes: string[] = [];
  for (const root of mounts.v2) {
    const rootNotes: string[] = [];
    const cgroups = await tryV2(root, rootNotes);
    if (cgroups) {
      notes.push(...rootNotes);
      return cgroups;
    }
    v2Notes.push(...rootNotes);
  }
  const v1Notes: string[] = [];
  const v1 = mounts.v1.length > 0 ? await tryV1(mounts.v1, v1Notes) : undefined;
  if (v1) notes.push(...v1Notes);
  else if (mounts.v1.length + mounts.v2.length === 0)
    notes.push('memory, CPU and process limits are not applied: no cgroup filesystem is mounted');
  else notes.push(...v2Notes, ...v1Notes);
  return v1;
}
