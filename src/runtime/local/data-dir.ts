import { existsSync } from 'node:fs';
import { findProgram, lookupUser, NOBODY, type SandboxMode } from './capabilities.js';
import { dataDirUnreachable } from './host-paths.js';

/** Where a root Slipway without bubblewrap keeps its data when the default ./.slipway is out of the apps' reach. */
export const SYSTEM_DATA_DIR = '/var/lib/slipway';

/**
 * The data dir to use. Without bubblewrap a root Slipway runs apps as nobody, which opens their files through the
 * data dir's path: the default `./.slipway` of a checkout under /root (0700) cannot be passed through, and no deploy
 * could start. When the data dir was not chosen (SLIPWAY_DATA_DIR unset) and holds nothing yet, the system dir is
 * used instead, and the reason is returned for the start-up log. A chosen or existing data dir is kept: it is the
 * operator's, and its deploys say what blocks them (host-paths.ts).
 */
export function chooseDataDir(
  settings: { dataDir: string; sandbox: SandboxMode },
  opts: { explicit: boolean; systemDir?: string; bwrapInstalled?: boolean },
): { dataDir: string; reason?: string } {
  const dataDir = settings.dataDir;
  const bwrap = opts.bwrapInstalled ?? findProgram('bwrap') !== undefined;
  if (opts.explicit || process.getuid?.() !== 0 || (bwrap && settings.sandbox !== 'off') || existsSync(dataDir))
    return { dataDir };
  const nobody = lookupUser(NOBODY);
  const closed = nobody && dataDirUnreachable(dataDir, { ...nobody, name: NOBODY });
  if (!closed) return { dataDir };
  const systemDir = opts.systemDir ?? SYSTEM_DATA_DIR;
  return {
    dataDir: systemDir,
    reason: `the data dir is ${systemDir}, not ${dataDir} (SLIPWAY_DATA_DIR chooses): ${closed}`,
  };
}
