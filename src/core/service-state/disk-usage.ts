import { statSync } from 'node:fs';
import path from 'node:path';
import { run } from '../../lib/exec.js';
import { diskUsageCommand } from '../../lib/file-trees.js';
import type { Layout } from './layout.js';

const DU_TIMEOUT_MS = 60_000;

/** Blocks a file really takes (a sparse build disk image takes what was written to it), 0 when missing. */
function allocatedBytes(file: string): number {
  try {
    return statSync(file).blocks * 512;
  } catch {
    return 0;
  }
}

/**
 * What a service takes on the host's disk (docs/deploys.md, "Artifacts and disk"): its artifacts and uploads, hard links
 * counted once (du), its build disk image (source, build scratch and dependency cache) and its container disk image
 * (images and containers' roots). Undefined when du failed.
 */
export async function serviceDiskBytes(layout: Layout, serviceId: string): Promise<number | undefined> {
  const dir = layout.serviceDir(serviceId);
  const dirs = ['artifacts', 'sources'].map((d) => path.join(dir, d));
  const du = await run(diskUsageCommand(...dirs), { timeoutMs: DU_TIMEOUT_MS });
  // A dir not made yet is reported missing (exit 1) and the others still counted.
  const kib = du.output
    .split('\n')
    .map((line) => /^(\d+)\t/.exec(line)?.[1])
    .filter((n): n is string => n !== undefined)
    .reduce((sum, n) => sum + Number(n), 0);
  if (du.exitCode !== 0 && kib === 0 && !du.output.includes('No such file')) return undefined;
  return (
    kib * 1024 + allocatedBytes(layout.buildDiskImage(serviceId)) + allocatedBytes(layout.containerDiskImage(serviceId))
  );
}
