import { existsSync, lstatSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import zlib from 'node:zlib';
import ignore, { type Ignore } from 'ignore';
import { CliError, EXIT } from './errors.js';

/** Never sent: the repository's history and this CLI's own link file (`.slipway/`). */
const ALWAYS_IGNORED = ['.git', '.slipway'];
const IGNORE_FILES = ['.gitignore', '.slipwayignore'];

interface Rules {
  /** The directory the rules' patterns are relative to, as a path relative to the packed root ('' for the root). */
  base: string;
  matcher: Ignore;
}

function rulesIn(root: string, rel: string): Rules | undefined {
  const matcher = ignore();
  let found = false;
  for (const name of IGNORE_FILES) {
    const file = path.join(root, rel, name);
    if (existsSync(file)) {
      matcher.add(readFileSync(file, 'utf8'));
      found = true;
    }
  }
  return found ? { base: rel, matcher } : undefined;
}

/**
 * Whether the entry is left out, as git decides: the deepest ignore file with a pattern for it wins (a `!pattern`
 * there keeps what a shallower one left out), and within a file the last matching pattern.
 */
function ignored(rules: Rules[], rel: string, isDir: boolean): boolean {
  for (let i = rules.length - 1; i >= 0; i--) {
    const { base, matcher } = rules[i]!;
    const relative = base ? path.posix.relative(base, rel) : rel;
    const verdict = matcher.test(isDir ? relative + '/' : relative);
    if (verdict.ignored) return true;
    if (verdict.unignored) return false;
  }
  return false;
}

/**
 * The files to send, relative to the root: everything but what the directory's .gitignore files (at every level)
 * and a .slipwayignore (same syntax) exclude. Symlinks are sent as links, as git stores them.
 */
export function filesToPack(root: string): string[] {
  if (!existsSync(root) || !statSync(root).isDirectory()) throw new CliError(`${root} is not a directory`, EXIT.USAGE);
  const files: string[] = [];
  const walk = (rel: string, rules: Rules[]) => {
    const own = rulesIn(root, rel);
    const active = own ? [...rules, own] : rules;
    for (const entry of readdirSync(path.join(root, rel), { withFileTypes: true })) {
      const child = rel ? `${rel}/${entry.name}` : entry.name;
      if (!rel && ALWAYS_IGNORED.includes(entry.name)) continue;
      if (ignored(active, child, entry.isDirectory())) continue;
      if (entry.isDirectory()) walk(child, active);
      else if (entry.isFile() || entry.isSymbolicLink()) files.push(child);
    }
  };
  walk('', []);
  return files.sort();
}

/** A tar stream is cut into blocks of this size, each compressed on its own (zlib's thread pool) as one gzip member. */
const BLOCK = 1024 * 1024;
const SAMPLE = 64 * 1024;
/** A block whose sample deflates to more than this share of its size is stored as it is (images, archives, binaries). */
const INCOMPRESSIBLE = 0.95;
const gzip = promisify(zlib.gzip);
const deflateRaw = promisify(zlib.deflateRaw);

/**
 * One block as a gzip member: stored when a quick look (its first 64 KB at level 1) says it will not shrink, else
 * compressed at zlib's default. Concatenated members are one valid gzip stream (RFC 1952), which Slipway reads whole.
 */
async function compressBlock(block: Buffer): Promise<Buffer> {
  const sample = block.subarray(0, SAMPLE);
  const deflated = await deflateRaw(sample, { level: 1 });
  return gzip(block, {
    level: deflated.length > sample.length * INCOMPRESSIBLE ? 0 : zlib.constants.Z_DEFAULT_COMPRESSION,
  });
}

/** Cuts a stream into blocks of BLOCK bytes (the last one shorter). */
async function* blocks(source: AsyncIterable<Buffer>): AsyncGenerator<Buffer> {
  let pending: Buffer[] = [];
  let size = 0;
  for await (const chunk of source) {
    pending.push(chunk);
    size += chunk.length;
    while (size >= BLOCK) {
      const all = Buffer.concat(pending);
      yield all.subarray(0, BLOCK);
      pending = [all.subarray(BLOCK)];
      size = all.length - BLOCK;
    }
  }
  if (size > 0) yield Buffer.concat(pending);
}

export interface Packed {
  /** The gzipped tarball, made while it is read: the upload starts with the first block. */
  stream: AsyncIterable<Buffer>;
  files: number;
  /** The files' total size: what the progress bar counts through. */
  bytes: number;
  /** Called with the tar bytes packed so far, as the stream is read. */
  onProgress?: (tarBytes: number) => void;
  /** Why packing failed, once it has. */
  error?: CliError;
}

/**
 * The directory as a gzipped tarball, streamed: the tar stream is compressed a block at a time on every core
 * (os.availableParallelism() blocks at once, in order), so packing runs beside the upload instead of before it
 * (bench/cli.ts: a 50 MB directory against curl of a ready tarball).
 */
export function packDirectory(root: string): Packed {
  const files = filesToPack(root);
  if (files.length === 0) throw new CliError(`nothing to deploy in ${root}: every file is ignored`, EXIT.USAGE);
  const bytes = files.reduce((sum, file) => sum + lstatSync(path.join(root, file)).size, 0);
  const packed: Packed = { files: files.length, bytes, stream: undefined as never };
  const parallel = Math.max(1, availableParallelism());
  packed.stream = (async function* () {
    try {
      yield* compressed();
    } catch (error) {
      // A file unreadable or gone while packing is this machine's problem, not the upload's.
      packed.error = new CliError(`cannot pack ${root}: ${(error as Error).message}`, EXIT.USAGE);
      throw packed.error;
    }
  })();
  async function* compressed() {
    const { create } = await import('tar');
    const tarStream = create({ cwd: root, portable: true, noDirRecurse: true }, files) as AsyncIterable<Buffer>;
    const inFlight: Array<Promise<Buffer>> = [];
    let tarBytes = 0;
    for await (const block of blocks(tarStream)) {
      tarBytes += block.length;
      packed.onProgress?.(tarBytes);
      inFlight.push(compressBlock(block));
      if (inFlight.length >= parallel) yield await inFlight.shift()!;
    }
    while (inFlight.length) yield await inFlight.shift()!;
  }
  return packed;
}

/** The whole tarball in memory, for a multipart form (a blueprint's directory). */
export async function packToBlob(root: string): Promise<Blob> {
  const chunks: Uint8Array[] = [];
  for await (const chunk of packDirectory(root).stream) chunks.push(new Uint8Array(chunk));
  return new Blob(chunks as BlobPart[], { type: 'application/gzip' });
}
