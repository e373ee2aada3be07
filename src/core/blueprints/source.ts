import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { extractArchive, type ArchiveLimits } from '../../lib/archive.js';
import { badRequest } from '../../lib/errors.js';
import { isRelativeInside, realPathInside } from '../../lib/paths.js';
import type { Runtime } from '../../runtime/types.js';
import { GitError, type Git } from '../builds/git.js';

/** What a blueprint's clone gets: the sandbox of a small build. */
const CLONE_LIMITS = { memoryMb: 1024, cpuMillicores: 1000, pids: 256, diskMb: 64 };

/** Render's limit for a Blueprint file. */
export const MAX_BLUEPRINT_BYTES = 10 * 1024 * 1024;

/** Where a blueprint's file comes from: a branch of a repo, or the latest uploaded archive. */
export type BlueprintSource =
  | { kind: 'repo'; repo: string; branch?: string; path: string }
  | { kind: 'archive'; file: string; sha256: string; path: string };

/** A failure to read the file: the sync fails with this message (never a 5xx). */
export class SourceError extends Error {}

/** `render.yaml`, `deploy/render.yaml`: a relative path inside the source, never out of it. */
export function checkBlueprintPath(p: string): string {
  const clean = p.replace(/^\.\/+/, '');
  if (!clean || !isRelativeInside(clean))
    throw badRequest('path must be a relative path inside the source, like render.yaml');
  return clean;
}

/** Reads `rel` under `dir`, refusing a file that resolves (through symlinks) out of it, a dir, or one over the limit. */
function readInside(dir: string, rel: string): string {
  const real = realPathInside(dir, path.join(dir, rel));
  if (real === 'missing') throw new SourceError(`${rel} was not found in the source`);
  if (real === 'outside') throw new SourceError(`${rel} points outside the source`);
  const stat = statSync(real);
  if (!stat.isFile()) throw new SourceError(`${rel} is not a file`);
  if (stat.size > MAX_BLUEPRINT_BYTES) throw new SourceError(`${rel} is over 10 MB`);
  return readFileSync(real, 'utf8');
}

/** How a repo's file is fetched: git in the sandbox, onto a disk of its own (mounted at `disk.dir` for the read). */
export interface RepoReader {
  git: Pick<Git, 'clone'>;
  mountDisk: Runtime['mountBuildDisk'];
  disk: { image: string; dir: string; sizeMb: number };
}

/** The file's text and what it was read from (the commit, or the archive's SHA-256). */
export async function readBlueprintFile(
  source: BlueprintSource,
  opts: { archive: ArchiveLimits; token?: string; repos: RepoReader },
): Promise<{ text: string; commitId: string }> {
  if (source.kind === 'archive') {
    const dir = mkdtempSync(path.join(tmpdir(), 'slipway-blueprint-'));
    try {
      await extractArchive(source.file, path.join(dir, 'src'), opts.archive).catch((err: Error) => {
        throw new SourceError(`the uploaded archive could not be unpacked: ${err.message}`);
      });
      return { text: readInside(path.join(dir, 'src'), source.path), commitId: source.sha256 };
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }
  const { git, mountDisk, disk: where } = opts.repos;
  const disk = await mountDisk(where);
  try {
    const checkout = path.join(disk.dir, 'src');
    rmSync(checkout, { recursive: true, force: true });
    const head = await git
      .clone({ repo: source.repo, branch: source.branch, token: opts.token, into: checkout, limits: CLONE_LIMITS })
      .catch((err: Error) => {
        throw err instanceof GitError ? new SourceError(err.message) : err;
      });
    return { text: readInside(checkout, source.path), commitId: head.commitId };
  } finally {
    await disk.release();
    rmSync(where.image, { force: true });
  }
}
