import { readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { run, type Command, TOOL_ENV } from '../../lib/exec.js';

const LINK_TIMEOUT_MS = 5 * 60_000;

/**
 * util-linux's hardlink: each file of `to` equal to one of `from` (same name, mode, owner and content; times ignored)
 * becomes a hard link to it. `--maximize` keeps the inode most already share, so a chain of deploys shares one copy.
 */
export const linkDuplicatesCommand = (from: string, to: string): Command => ({
  file: 'hardlink',
  args: ['--quiet', '--ignore-time', '--respect-name', '--maximize', '--', from, to],
  env: TOOL_ENV,
});

/** The newest other artifact of the service, by the time its dir was made. */
function previousArtifact(artifactDir: string): string | undefined {
  const parent = path.dirname(artifactDir);
  let newest: { dir: string; at: number } | undefined;
  for (const entry of readdirSync(parent, { withFileTypes: true })) {
    const dir = path.join(parent, entry.name);
    // A dot-dir is an artifact still being copied (pipeline.ts's publish).
    if (!entry.isDirectory() || dir === artifactDir || entry.name.startsWith('.')) continue;
    const at = statSync(dir).mtimeMs;
    if (!newest || at > newest.at) newest = { dir, at };
  }
  return newest?.dir;
}

/**
 * Makes a new artifact share its unchanged files with the service's previous one (docs/deploys.md, "Build limits"), so
 * five kept deploys of an app cost little more than one. Artifacts are never written after they are made (mounted
 * read-only for the app), which is what makes sharing an inode safe, even while instances run from both: a file is
 * replaced by a rename, and a process that has it open keeps what it opened. Returns why, if it failed: the artifact
 * is whole either way.
 */
export async function shareUnchangedFiles(artifactDir: string): Promise<string | undefined> {
  const previous = previousArtifact(artifactDir);
  if (!previous) return undefined;
  const linked = await run(linkDuplicatesCommand(previous, artifactDir), { timeoutMs: LINK_TIMEOUT_MS });
  if (linked.exitCode === 0) return undefined;
  return `could not share unchanged files with the previous artifact: ${linked.output.trim().slice(-300) || linked.signal}`;
}
