import { closeSync, constants, fstatSync, openSync } from 'node:fs';
import { copyFile, lstat, mkdir, open, readdir, rm, symlink } from 'node:fs/promises';
import path from 'node:path';
import yauzl from 'yauzl';
import { ArchiveBudget, rejectArchive as reject, showEntry as show, type ArchiveLimits } from './archive-budget.js';
import { readTarGz, scanTarGz } from './archive-tar.js';
import { AppError } from './errors.js';
import { openZip } from './zip-reader.js';

export type { ArchiveLimits } from './archive-budget.js';
export type ArchiveFormat = 'tar.gz' | 'zip';

/** Kernel-like symlink hop limit; also bounds our own resolution of chained links. */
const MAX_SYMLINK_HOPS = 40;
/** PATH_MAX: no real symlink target is longer. */
const MAX_LINK_TARGET = 4096;

/** Detects the format by magic bytes (gzip 1f 8b; zip 50 4b 03 04 / empty zip 50 4b 05 06); undefined when neither. */
export async function detectArchiveFormat(file: string): Promise<ArchiveFormat | undefined> {
  const handle = await open(file, 'r');
  try {
    const { buffer, bytesRead } = await handle.read(Buffer.alloc(4), 0, 4, 0);
    if (bytesRead >= 2 && buffer[0] === 0x1f && buffer[1] === 0x8b) return 'tar.gz';
    const zipMagic = bytesRead === 4 && buffer[0] === 0x50 && buffer[1] === 0x4b;
    if (zipMagic && ((buffer[2] === 3 && buffer[3] === 4) || (buffer[2] === 5 && buffer[3] === 6))) return 'zip';
    return undefined;
  } finally {
    await handle.close();
  }
}

/**
 * Extracts `file` into `dest` (created; must not exist or be empty). On any violation it throws
 * `new AppError('bad_request', <clear message naming the entry and the rule>)` (AppError from ./errors.js)
 * and removes everything it wrote (dest removed entirely), so a rejected archive leaves nothing behind.
 * `files` counts every entry (files, directories, links) — the quantity `maxFiles` limits.
 */
export async function extractArchive(
  file: string,
  dest: string,
  limits: ArchiveLimits,
): Promise<{ format: ArchiveFormat; files: number; bytes: number }> {
  const format = await detectArchiveFormat(file);
  if (!format) throw reject('unsupported archive format: the upload is neither a .tar.gz/.tgz nor a .zip file');
  await mkdir(dest, { recursive: true, mode: 0o755 });
  // Not ours to delete: a caller bug, so a plain error rather than a 400.
  if ((await readdir(dest)).length > 0) throw new Error(`archive destination ${dest} is not empty`);
  const tree = new SafeTree(path.resolve(dest), limits);
  try {
    // Headers first, writing nothing (a zip's are all in its central directory): a count or
    // size bomb is refused at its first entry past a limit, not after unpacking all before it.
    if (format === 'zip') await readZip(file, tree);
    else await scanTarGz(file, limits).then(() => readTarGz(file, tree));
    await tree.createSymlinks();
    return { format, files: tree.entries, bytes: tree.bytes };
  } catch (err) {
    await rm(dest, { recursive: true, force: true });
    throw asArchiveError(err);
  }
}

/** Filesystem errors caused by what the archive contains (name clashes, bad names) are the uploader's fault. */
const ARCHIVE_FAULT_CODES = new Set(['EEXIST', 'ENOTDIR', 'EISDIR', 'ENAMETOOLONG', 'EINVAL', 'ELOOP', 'EILSEQ']);

function asArchiveError(err: unknown): unknown {
  if (err instanceof AppError) return err;
  const e = err as NodeJS.ErrnoException;
  if (e?.syscall && !ARCHIVE_FAULT_CODES.has(e.code ?? '')) return err; // disk full, permissions: our problem (500)
  return reject(`archive is corrupt, truncated or unreadable: ${e?.message ?? String(err)}`);
}

/** Normalises an entry name to a dest-relative POSIX path ('' = dest itself), rejecting absolute and escaping names. */
function entryPath(raw: string): string {
  if (raw.includes('\0')) throw reject(`archive entry ${show(raw)} has a NUL byte in its name`);
  const name = raw.replace(/\\/g, '/'); // Windows separators must not smuggle in `..\` or `C:\`
  if (name.startsWith('/') || /^[A-Za-z]:/.test(name)) throw reject(`archive entry ${show(raw)} has an absolute path`);
  const segments: string[] = [];
  for (const segment of name.split('/')) {
    if (segment === '' || segment === '.') continue;
    if (segment !== '..') segments.push(segment);
    else if (segments.pop() === undefined) throw reject(`archive entry ${show(raw)} escapes the destination with '..'`);
  }
  return segments.join('/');
}

/**
 * Writes entries under `root` while enforcing the limits. No symlink exists on disk until every
 * file is written (they are created last, by createSymlinks), so nothing can be written through one;
 * entries under a symlink's path are rejected outright.
 */
class SafeTree extends ArchiveBudget {
  private readonly dirs = new Set<string>(['']); // real directories we created
  private readonly files = new Map<string, number>(); // regular file -> size, for hardlink copies
  private readonly symlinks = new Map<string, string>(); // link -> target, created at the end

  constructor(
    private readonly root: string,
    limits: ArchiveLimits,
  ) {
    super(limits);
  }

  /** Counts the entry and returns its normalised path, refusing a second entry at a taken path. */
  private claim(raw: string, kind: 'directory' | 'file' | 'symlink'): string {
    this.countEntry(raw);
    const rel = entryPath(raw);
    if (kind === 'directory') {
      if (this.files.has(rel) || this.symlinks.has(rel))
        throw reject(`archive entry ${show(raw)} is a directory and also a file or link`);
      return rel;
    }
    if (rel === '') throw reject(`archive entry ${show(raw)} has an empty path`);
    if (this.dirs.has(rel) || this.files.has(rel) || this.symlinks.has(rel))
      throw reject(`archive entry ${show(raw)} appears more than once`);
    return rel;
  }

  /** Creates `rel` and its parents as real directories, refusing to go through a file or symlink entry. */
  private async ensureDir(rel: string, raw: string) {
    let prefix = '';
    for (const segment of rel ? rel.split('/') : []) {
      prefix = prefix ? `${prefix}/${segment}` : segment;
      if (this.dirs.has(prefix)) continue;
      if (this.symlinks.has(prefix))
        throw reject(`archive entry ${show(raw)} would be written through the symlink ${show(prefix)}`);
      if (this.files.has(prefix))
        throw reject(`archive entry ${show(raw)} would be written inside the file ${show(prefix)}`);
      await mkdir(path.join(this.root, prefix), { mode: 0o755 });
      this.dirs.add(prefix);
    }
  }

  async directory(raw: string) {
    await this.ensureDir(this.claim(raw, 'directory'), raw);
  }

  /** Streams a regular file; only the executable bits of `mode` survive (never setuid/setgid/sticky). */
  async file(raw: string, mode: number, declaredSize: number, openData: () => Promise<AsyncIterable<Buffer>>) {
    const rel = this.claim(raw, 'file');
    // Header sizes may lie (zip), so bytes are counted as they stream; but a claim past the limit is reason enough to stop now.
    this.checkClaim(declaredSize, raw);
    await this.ensureDir(parentOf(rel), raw);
    const perms = mode & 0o111 ? 0o755 : 0o644;
    const handle = await open(path.join(this.root, rel), 'wx', perms); // O_EXCL: never reuse an existing node
    let size = 0;
    try {
      for await (const chunk of await openData()) {
        this.addBytes(chunk.length, raw);
        size += chunk.length;
        await handle.write(chunk);
      }
      await handle.chmod(perms); // independent of the process umask
    } finally {
      await handle.close();
    }
    this.files.set(rel, size);
  }

  /** Records a symlink for createSymlinks; its parents are made real directories now so nothing can later take their place. */
  async symlink(raw: string, target: string) {
    const rel = this.claim(raw, 'symlink');
    if (!target || target.length > MAX_LINK_TARGET || target.includes('\0'))
      throw reject(`archive entry ${show(raw)} is a symlink with an empty, oversized or invalid target`);
    if (/^([/\\]|[A-Za-z]:)/.test(target))
      throw reject(`archive entry ${show(raw)} is a symlink to the absolute path ${show(target)}`);
    await this.ensureDir(parentOf(rel), raw);
    this.symlinks.set(rel, target);
  }

  // Hardlinks are materialised as copies of an earlier regular file of the archive (counted against maxBytes); any other target is rejected.
  async hardlink(raw: string, target: string) {
    let source: string | undefined;
    try {
      source = entryPath(target);
    } catch {
      // an absolute or escaping target is simply not an earlier file
    }
    const size = source === undefined ? undefined : this.files.get(source);
    if (source === undefined || size === undefined)
      throw reject(
        `archive entry ${show(raw)} is a hardlink to ${show(target)}, which is not an earlier file in the archive`,
      );
    const rel = this.claim(raw, 'file');
    this.addBytes(size, raw);
    await this.ensureDir(parentOf(rel), raw);
    await copyFile(path.join(this.root, source), path.join(this.root, rel), constants.COPYFILE_EXCL);
    this.files.set(rel, size);
  }

  /** Resolves every link the way the kernel would (following the archive's other links) and creates them only if all stay inside. */
  async createSymlinks() {
    for (const [rel, target] of this.symlinks) {
      if (!this.resolvesInside(rel, target))
        throw reject(`archive entry ${show(rel)} is a symlink to ${show(target)}, which resolves outside the archive`);
    }
    for (const [rel, target] of this.symlinks) {
      const parent = path.join(this.root, path.posix.dirname(rel));
      if (!(await lstat(parent)).isDirectory())
        throw reject(`archive entry ${show(rel)} has a parent that is not a directory`);
      await symlink(target, path.join(this.root, rel));
    }
  }

  private resolvesInside(rel: string, target: string): boolean {
    let hops = 0;
    const walk = (base: string[], linkTarget: string): string[] | undefined => {
      const stack = [...base];
      for (const segment of linkTarget.split(/[/\\]/)) {
        if (segment === '' || segment === '.') continue;
        if (segment === '..') {
          if (stack.pop() === undefined) return undefined; // would climb above dest
          continue;
        }
        stack.push(segment);
        const next = this.symlinks.get(stack.join('/'));
        if (next === undefined) continue;
        if (++hops > MAX_SYMLINK_HOPS) return undefined;
        stack.pop();
        const resolved = walk(stack, next);
        if (!resolved) return undefined;
        stack.splice(0, stack.length, ...resolved);
      }
      return stack;
    };
    return walk(rel.split('/').slice(0, -1), target) !== undefined;
  }
}

function parentOf(rel: string): string {
  const parent = path.posix.dirname(rel);
  return parent === '.' ? '' : parent;
}

const [S_IFMT, S_IFDIR, S_IFREG, S_IFLNK] = [0o170000, 0o040000, 0o100000, 0o120000];

/** A zip symlink's target is its content; reads just past MAX_LINK_TARGET so tree.symlink can refuse a huge one. */
async function readLinkTarget(stream: AsyncIterable<Buffer>): Promise<string> {
  const chunks: Buffer[] = [];
  let length = 0;
  for await (const chunk of stream) {
    chunks.push(chunk);
    if ((length += chunk.length) > MAX_LINK_TARGET) break;
  }
  return Buffer.concat(chunks).toString('utf8');
}

type ZipEntry = yauzl.Entry;

/** What a zip entry is, from its central-directory record; a kind we never unpack is refused here. */
function zipEntryKind(entry: ZipEntry): { name: string; unixMode: number; kind: 'directory' | 'symlink' | 'file' } {
  const name = yauzl.getFileNameLowLevel(entry.generalPurposeBitFlag, entry.fileNameRaw, entry.extraFields, false);
  const unixMode = entry.versionMadeBy >> 8 === 3 ? entry.externalFileAttributes >>> 16 : 0; // only Unix hosts store a mode
  const type = unixMode & S_IFMT;
  if (name.endsWith('/') || type === S_IFDIR) return { name, unixMode, kind: 'directory' };
  if (type === S_IFLNK) return { name, unixMode, kind: 'symlink' };
  if (type !== 0 && type !== S_IFREG) {
    throw reject(
      `archive entry ${show(name)} is a device, FIFO or socket (mode 0o${unixMode.toString(8)}); only files, directories and links are allowed`,
    );
  }
  if (entry.isEncrypted()) throw reject(`archive entry ${show(name)} is encrypted`);
  return { name, unixMode, kind: 'file' };
}

/**
 * The central directory is read whole first, writing nothing: a count or size bomb is refused at
 * its first entry past a limit, by the sizes entries claim. Then the entries are unpacked; claimed
 * sizes may lie, so SafeTree counts the bytes again as they inflate.
 */
async function readZip(file: string, tree: SafeTree) {
  const fd = openSync(file, 'r');
  const zip = await openZip(fd, fstatSync(fd).size, {
    lazyEntries: true,
    autoClose: false,
    decodeStrings: false,
    validateEntrySizes: true,
  }).catch((err: unknown) => {
    closeSync(fd);
    throw err;
  });
  zip.on('error', () => {}); // surfaced through eachEntry/openReadStream; must not crash the process
  try {
    if (zip.entryCount > tree.limits.maxFiles)
      throw reject(`archive has ${zip.entryCount} entries, more than the limit of ${tree.limits.maxFiles}`);
    const claims = new ArchiveBudget(tree.limits);
    const entries: Array<ReturnType<typeof zipEntryKind> & { entry: ZipEntry }> = [];
    for await (const entry of zip.eachEntry()) {
      const kind = zipEntryKind(entry);
      claims.countEntry(kind.name);
      if (kind.kind === 'file') claims.addBytes(entry.uncompressedSize, kind.name);
      entries.push({ ...kind, entry });
    }
    for (const { entry, name, unixMode, kind } of entries) {
      if (kind === 'directory') await tree.directory(name);
      else if (kind === 'symlink')
        await tree.symlink(name, await readLinkTarget(await zip.openReadStreamPromise(entry)));
      else await tree.file(name, unixMode, entry.uncompressedSize, () => zip.openReadStreamPromise(entry));
    }
  } finally {
    zip.close();
  }
}
