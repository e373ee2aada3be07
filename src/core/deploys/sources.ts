import { createHash, randomBytes } from 'node:crypto';
import {
  chmodSync,
  copyFileSync,
  createWriteStream,
  linkSync,
  mkdirSync,
  readdirSync,
  renameSync,
  rmSync,
  statSync,
} from 'node:fs';
import path from 'node:path';
import { Transform, type Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { detectArchiveFormat, extractArchive, type ArchiveLimits } from '../../lib/archive.js';
import { AppError } from '../../lib/errors.js';
import { newId } from '../../lib/ids.js';
import type { DeployRepo, SourceRow } from '../../store/repos/deploys.js';
import type { Layout } from '../service-state/layout.js';

/**
 * Receives an archive: streamed to `tmp` with its SHA-256 under a size limit, then unpacked once into a scratch dir
 * to reject hostile archives before anything is kept. On failure nothing is left and the error is a 4xx.
 */
export async function receiveArchive(
  body: Readable,
  tmp: string,
  limits: { maxBytes: number; archive: ArchiveLimits },
): Promise<{ sha256: string; sizeBytes: number }> {
  const hash = createHash('sha256');
  let size = 0;
  const meter = new Transform({
    transform(chunk: Buffer, _enc, done) {
      size += chunk.length;
      if (size > limits.maxBytes)
        return done(new AppError('payload_too_large', `the archive is larger than ${limits.maxBytes} bytes`));
      hash.update(chunk);
      done(null, chunk);
    },
  });
  try {
    await pipeline(body, meter, createWriteStream(tmp, { mode: 0o600 }));
    if (size === 0)
      throw new AppError('bad_request', 'the upload is empty: send a .tar.gz or .zip archive as the body');
    if (!(await detectArchiveFormat(tmp))) throw new AppError('bad_request', 'not a .tar.gz/.tgz or .zip archive');
    const scratch = `${tmp}.check`;
    try {
      await extractArchive(tmp, scratch, limits.archive);
    } finally {
      rmSync(scratch, { recursive: true, force: true });
    }
    return { sha256: hash.digest('hex'), sizeBytes: size };
  } catch (err) {
    rmSync(tmp, { force: true });
    body.resume(); // drain what the client still sends, so it reads our error
    if (err instanceof AppError) throw err;
    if ((err as NodeJS.ErrnoException).code === 'ERR_STREAM_PREMATURE_CLOSE' || (err as Error).message === 'aborted')
      throw new AppError('bad_request', 'the upload was interrupted');
    throw err;
  }
}

/** Stores an uploaded source archive of a service (receiveArchive), then records it. */
export function createSourceStore(deps: {
  repo: Pick<DeployRepo, 'insertSource'>;
  layout: Layout;
  maxUploadBytes: number;
  archive: ArchiveLimits;
}) {
  const { layout } = deps;
  return async function saveUpload(serviceId: string, body: Readable): Promise<SourceRow> {
    const incoming = layout.uploadTmp(serviceId);
    mkdirSync(incoming, { recursive: true, mode: 0o700 });
    chmodSync(path.dirname(incoming), 0o700); // uploads are Slipway's alone, even where apps open their files by path
    const tmp = path.join(incoming, randomBytes(8).toString('hex'));
    const received = await receiveArchive(body, tmp, { maxBytes: deps.maxUploadBytes, archive: deps.archive });
    const id = newId('source');
    try {
      renameSync(tmp, layout.sourceFile(serviceId, id));
      return await deps.repo.insertSource({ id, serviceId, ...received });
    } catch (err) {
      rmSync(tmp, { force: true });
      throw err;
    }
  };
}
export type SaveUpload = ReturnType<typeof createSourceStore>;

/**
 * Records an archive that was checked when it arrived (a blueprint's) as a service's source, without checking it
 * again: a hard link (the same file system), or a copy.
 */
export function createSourceLinker(deps: { repo: Pick<DeployRepo, 'insertSource'>; layout: Layout }) {
  return async function linkSource(serviceId: string, archive: { file: string; sha256: string }): Promise<SourceRow> {
    const incoming = deps.layout.uploadTmp(serviceId);
    mkdirSync(incoming, { recursive: true, mode: 0o700 });
    chmodSync(path.dirname(incoming), 0o700);
    const id = newId('source');
    const dest = deps.layout.sourceFile(serviceId, id);
    try {
      linkSync(archive.file, dest);
    } catch {
      copyFileSync(archive.file, dest);
    }
    return deps.repo.insertSource({ id, serviceId, sha256: archive.sha256, sizeBytes: statSync(dest).size });
  };
}
export type LinkSource = ReturnType<typeof createSourceLinker>;

/**
 * Removes partial uploads (and their check dirs) that a crash left in every service's `.incoming`:
 * nothing will ever finish them. Runs at start, while the data-dir lock says no upload is under way.
 */
export function removePartialUploads(layout: Layout): number {
  let services: string[];
  try {
    services = readdirSync(layout.servicesDir);
  } catch {
    return 0; // no service yet
  }
  let removed = 0;
  for (const serviceId of services) {
    const incoming = layout.uploadTmp(serviceId);
    let left: string[];
    try {
      left = readdirSync(incoming);
    } catch {
      continue;
    }
    for (const name of left) rmSync(path.join(incoming, name), { recursive: true, force: true });
    removed += left.length;
  }
  return removed;
}
