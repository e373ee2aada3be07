import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import {
  chmod,
  lstat,
  mkdir,
  mkdtemp,
  readdir,
  readFile,
  readlink,
  rm,
  stat,
  symlink,
  writeFile,
} from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import * as tar from 'tar';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import yazl from 'yazl';
import { detectArchiveFormat, extractArchive, type ArchiveLimits } from '../src/lib/archive.js';
import { rawTarGz } from './helpers/hostile.js';
import { AppError } from '../src/lib/errors.js';

const LIMITS: ArchiveLimits = { maxFiles: 1000, maxBytes: 10 * 1024 * 1024 };
const MB = 1024 * 1024;

// ---- fixture builders: hostile archives are crafted byte by byte at test time ----

interface ZipEntry {
  name: string;
  data?: Buffer;
  mode?: number;
  dir?: boolean;
}

/** Builds a zip with yazl; names yazl refuses (`../x`, `/x`) are written as same-length placeholders, then patched in. */
async function zipBuffer(entries: ZipEntry[]): Promise<Buffer> {
  const zip = new yazl.ZipFile();
  const patches: Array<[Buffer, Buffer]> = [];
  entries.forEach(({ name, data = Buffer.alloc(0), mode, dir }, index) => {
    const placeholder = dir ? `Q${index}`.padEnd(name.length - 1, 'Q') + '/' : `Q${index}`.padEnd(name.length, 'Q');
    patches.push([Buffer.from(placeholder), Buffer.from(name)]);
    if (dir) zip.addEmptyDirectory(placeholder, mode === undefined ? {} : { mode });
    else zip.addBuffer(data, placeholder, { compress: true, ...(mode === undefined ? {} : { mode }) });
  });
  zip.end();
  const chunks: Buffer[] = [];
  for await (const chunk of zip.outputStream as AsyncIterable<Buffer>) chunks.push(chunk);
  const buffer = Buffer.concat(chunks);
  for (const [from, to] of patches) {
    for (let at = buffer.indexOf(from); at >= 0; at = buffer.indexOf(from, at + 1)) to.copy(buffer, at);
  }
  return buffer;
}

/** Rewrites the uncompressed size in every local and central header: the zip now lies about its content. */
function claimUncompressedSize(zip: Buffer, size: number): Buffer {
  const patch = (signature: number[], offset: number) => {
    const magic = Buffer.from(signature);
    for (let at = zip.indexOf(magic); at >= 0; at = zip.indexOf(magic, at + 4)) zip.writeUInt32LE(size, at + offset);
  };
  patch([0x50, 0x4b, 0x03, 0x04], 22); // local file header
  patch([0x50, 0x4b, 0x01, 0x02], 24); // central directory header
  return zip;
}

// ---- per-test sandbox: dest lives in sandbox/, and outside/ is where escapes would land ----

let root: string;
let sandbox: string;
let dest: string;
let outside: string;
beforeEach(async () => {
  root = await mkdtemp(path.join(os.tmpdir(), 'slipway-archive-'));
  sandbox = path.join(root, 'sandbox');
  dest = path.join(sandbox, 'dest');
  outside = path.join(root, 'outside');
  await mkdir(sandbox);
  await mkdir(outside);
});
afterEach(async () => {
  await rm(root, { recursive: true, force: true });
});

async function archiveFile(name: string, content: Buffer): Promise<string> {
  const file = path.join(root, name);
  await writeFile(file, content);
  return file;
}

/** Asserts a 400 naming the rule, and that nothing was left in dest or written next to it. */
async function expectRejected(file: string, message: RegExp, limits = LIMITS, escapes: string[] = []) {
  const error = await extractArchive(file, dest, limits).then(
    () => undefined,
    (err: unknown) => err,
  );
  expect(error).toBeInstanceOf(AppError);
  expect(error).toMatchObject({ code: 'bad_request', statusCode: 400 });
  expect((error as Error).message).toMatch(message);
  expect(existsSync(dest)).toBe(false);
  expect(await readdir(sandbox)).toEqual([]);
  expect(await readdir(outside)).toEqual([]);
  for (const escape of escapes) expect(existsSync(escape)).toBe(false);
}

const hasZip = (() => {
  try {
    execFileSync('zip', ['-v'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
})();

const LONG_NAME = `${'n'.repeat(110)}.txt`;
const SOURCE_TREE_BYTES = 16 + 18 + 5 + 5;

/** A realistic source tree: nested dirs, an executable, a long name, an empty dir and an inside symlink. */
async function makeSourceTree(base: string): Promise<string> {
  const project = path.join(base, 'package');
  const longDir = path.join(project, 'src', 'a'.repeat(60), 'b'.repeat(60));
  await mkdir(longDir, { recursive: true });
  await mkdir(path.join(project, 'bin'));
  await mkdir(path.join(project, 'empty'));
  await writeFile(path.join(project, 'package.json'), '{"name":"demo"}\n');
  await writeFile(path.join(project, 'bin', 'start.sh'), '#!/bin/sh\necho hi\n');
  await chmod(path.join(project, 'bin', 'start.sh'), 0o755);
  await writeFile(path.join(longDir, 'deep.txt'), 'deep\n');
  await writeFile(path.join(project, LONG_NAME), 'long\n'); // > 100 bytes: needs a GNU long-name or pax record
  await symlink('package.json', path.join(project, 'manifest.json'));
  return project;
}

async function expectSourceTree(project: string) {
  expect(await readFile(path.join(project, 'package.json'), 'utf8')).toBe('{"name":"demo"}\n');
  expect((await stat(path.join(project, 'bin', 'start.sh'))).mode & 0o777).toBe(0o755);
  expect((await stat(path.join(project, 'package.json'))).mode & 0o111).toBe(0);
  expect(await readFile(path.join(project, 'src', 'a'.repeat(60), 'b'.repeat(60), 'deep.txt'), 'utf8')).toBe('deep\n');
  expect(await readFile(path.join(project, LONG_NAME), 'utf8')).toBe('long\n');
  expect((await stat(path.join(project, 'empty'))).isDirectory()).toBe(true);
  expect((await lstat(path.join(project, 'manifest.json'))).isSymbolicLink()).toBe(true);
  expect(await readlink(path.join(project, 'manifest.json'))).toBe('package.json');
}

describe('detectArchiveFormat', () => {
  it('recognises gzip and zip magic bytes and nothing else', async () => {
    expect(
      await detectArchiveFormat(await archiveFile('a.tgz', rawTarGz([{ name: 'x', data: Buffer.from('x') }]))),
    ).toBe('tar.gz');
    expect(await detectArchiveFormat(await archiveFile('a.zip', await zipBuffer([{ name: 'x' }])))).toBe('zip');
    expect(await detectArchiveFormat(await archiveFile('empty.zip', await zipBuffer([])))).toBe('zip');
    expect(
      await detectArchiveFormat(await archiveFile('random.bin', Buffer.from('7a3f0c9e1b2d4f6a8c0e', 'hex'))),
    ).toBeUndefined();
    expect(await detectArchiveFormat(await archiveFile('tiny.bin', Buffer.from([0x1f])))).toBeUndefined();
  });
});

describe('extractArchive: real-world archives', () => {
  it.each(['gnu', 'pax'])(
    'extracts a %s tar made by the system tar (./ prefix, long names, exec bit, inside symlink)',
    async (format) => {
      const source = await makeSourceTree(path.join(root, 'src'));
      const file = path.join(root, 'system.tar.gz');
      execFileSync('tar', [`--format=${format}`, '-czf', file, '-C', path.dirname(source), '.']);
      const result = await extractArchive(file, dest, LIMITS);
      expect(result).toEqual({ format: 'tar.gz', files: 12, bytes: SOURCE_TREE_BYTES }); // ./ + 11 entries of the tree
      await expectSourceTree(path.join(dest, 'package'));
    },
  );

  it('extracts an npm-pack style pax tar made by node-tar', async () => {
    const source = await makeSourceTree(path.join(root, 'src'));
    const file = path.join(root, 'npm.tgz');
    await tar.c({ gzip: true, file, cwd: path.dirname(source), portable: true }, ['package']);
    const result = await extractArchive(file, dest, LIMITS);
    expect(result).toMatchObject({ format: 'tar.gz', bytes: SOURCE_TREE_BYTES });
    await expectSourceTree(path.join(dest, 'package'));
  });

  it('extracts a yazl zip with exec bits, an inside symlink, directories and __MACOSX entries', async () => {
    const file = await archiveFile(
      'app.zip',
      await zipBuffer([
        { name: 'app/', dir: true },
        { name: 'app/run.sh', data: Buffer.from('#!/bin/sh\n'), mode: 0o100755 },
        { name: 'app/readme.md', data: Buffer.from('hello'), mode: 0o104644 }, // setuid must be dropped
        { name: 'app/lib/index.js', data: Buffer.from('export {}') },
        { name: 'app/main.js', data: Buffer.from('lib/index.js'), mode: 0o120777 },
        { name: '__MACOSX/app/._run.sh', data: Buffer.from('resource fork') },
      ]),
    );
    expect(await extractArchive(file, dest, LIMITS)).toEqual({ format: 'zip', files: 6, bytes: 10 + 5 + 9 + 13 });
    expect((await stat(path.join(dest, 'app/run.sh'))).mode & 0o7777).toBe(0o755);
    expect((await stat(path.join(dest, 'app/readme.md'))).mode & 0o7777).toBe(0o644);
    expect(await readlink(path.join(dest, 'app/main.js'))).toBe('lib/index.js');
    expect(await readFile(path.join(dest, 'app/main.js'), 'utf8')).toBe('export {}');
    expect(await readFile(path.join(dest, '__MACOSX/app/._run.sh'), 'utf8')).toBe('resource fork');
  });

  it.skipIf(!hasZip)('extracts a zip made by `zip -ry`', async () => {
    const source = await makeSourceTree(path.join(root, 'src'));
    const file = path.join(root, 'cli.zip');
    execFileSync('zip', ['-qry', file, 'package'], { cwd: path.dirname(source) });
    expect((await extractArchive(file, dest, LIMITS)).format).toBe('zip');
    await expectSourceTree(path.join(dest, 'package'));
  });

  it('keeps relative symlinks that stay inside, even through other links, and copies inside hardlinks', async () => {
    const file = await archiveFile(
      'links.tgz',
      rawTarGz([
        { name: 'pkg/cli.js', data: Buffer.from('cli') },
        { name: 'node_modules/.bin/cli', type: '2', linkname: '../../pkg/cli.js' },
        { name: 'a/b', type: '2', linkname: '..' }, // a/b -> dest itself: allowed
        { name: 'c', type: '2', linkname: 'a/b/pkg' },
        { name: 'pkg/copy.js', type: '1', linkname: 'pkg/cli.js' },
      ]),
    );
    await extractArchive(file, dest, LIMITS);
    expect(await readFile(path.join(dest, 'node_modules/.bin/cli'), 'utf8')).toBe('cli');
    expect(await readFile(path.join(dest, 'c/cli.js'), 'utf8')).toBe('cli');
    expect(await readFile(path.join(dest, 'pkg/copy.js'), 'utf8')).toBe('cli');
    expect((await stat(path.join(dest, 'pkg/copy.js'))).nlink).toBe(1); // a copy, not a link to anything
  });

  it('extracts an empty zip to an empty directory', async () => {
    expect(await extractArchive(await archiveFile('empty.zip', await zipBuffer([])), dest, LIMITS)).toEqual({
      format: 'zip',
      files: 0,
      bytes: 0,
    });
    expect(await readdir(dest)).toEqual([]);
  });

  it('accepts exactly maxFiles entries', async () => {
    const entries = Array.from({ length: 50 }, (_, i) => ({ name: `f${i}`, data: Buffer.from('x') }));
    const result = await extractArchive(await archiveFile('fifty.tgz', rawTarGz(entries)), dest, {
      maxFiles: 50,
      maxBytes: MB,
    });
    expect(result).toEqual({ format: 'tar.gz', files: 50, bytes: 50 });
  });
});

describe('extractArchive: hostile tar.gz', () => {
  it('rejects ../ escapes', async () => {
    const file = await archiveFile(
      'dotdot.tgz',
      rawTarGz([
        { name: 'ok.txt', data: Buffer.from('ok') },
        { name: '../evil', data: Buffer.from('pwned') },
      ]),
    );
    await expectRejected(file, /"\.\.\/evil" escapes/, LIMITS, [path.join(sandbox, 'evil')]);
  });

  it('checks the name from a GNU long-name record, not the placeholder header name', async () => {
    const longEscape = `../${'x'.repeat(120)}`;
    const file = await archiveFile(
      'longlink.tgz',
      rawTarGz([
        { name: '././@LongLink', type: 'L', data: Buffer.from(`${longEscape}\0`) },
        { name: 'harmless', data: Buffer.from('x') },
      ]),
    );
    await expectRejected(file, /escapes the destination/, LIMITS, [path.join(sandbox, longEscape.slice(3))]);
  });

  it('rejects absolute paths', async () => {
    const target = path.join(outside, 'abs-evil');
    await expectRejected(
      await archiveFile('abs.tgz', rawTarGz([{ name: target, data: Buffer.from('pwned') }])),
      /absolute path/,
      LIMITS,
      [target],
    );
  });

  it('rejects symlinks to absolute paths, and writes through them', async () => {
    await expectRejected(
      await archiveFile('etc.tgz', rawTarGz([{ name: 'etc', type: '2', linkname: '/etc' }])),
      /"etc" is a symlink to the absolute path "\/etc"/,
    );
    const file = await archiveFile(
      'through-abs.tgz',
      rawTarGz([
        { name: 'link', type: '2', linkname: outside },
        { name: 'link/pwned', data: Buffer.from('x') },
      ]),
    );
    await expectRejected(file, /absolute path/, LIMITS, [path.join(outside, 'pwned')]);
  });

  it('rejects a symlink to .. and a write through it', async () => {
    const file = await archiveFile(
      'through-parent.tgz',
      rawTarGz([
        { name: 'link', type: '2', linkname: '..' },
        { name: 'link/evil', data: Buffer.from('x') },
      ]),
    );
    await expectRejected(file, /written through the symlink "link"/, LIMITS, [path.join(sandbox, 'evil')]);
    await expectRejected(
      await archiveFile('parent.tgz', rawTarGz([{ name: 'up', type: '2', linkname: '../..' }])),
      /"up" is a symlink to "\.\.\/\.\.", which resolves outside/,
    );
  });

  it('rejects writes through a symlink even when it points inside', async () => {
    const file = await archiveFile(
      'alias.tgz',
      rawTarGz([
        { name: 'dir/', type: '5' },
        { name: 'alias', type: '2', linkname: 'dir' },
        { name: 'alias/file', data: Buffer.from('x') },
      ]),
    );
    await expectRejected(file, /"alias\/file" would be written through the symlink "alias"/);
  });

  it('rejects a symlink that escapes only by going through another symlink', async () => {
    // a/b -> .. is dest itself, so a lexical check of "a/b/.." sees `.`; the kernel sees dest/.. (outside).
    const file = await archiveFile(
      'chain.tgz',
      rawTarGz([
        { name: 'a/b', type: '2', linkname: '..' },
        { name: 'c', type: '2', linkname: 'a/b/..' },
      ]),
    );
    await expectRejected(file, /"c" is a symlink to "a\/b\/\.\.".*outside/);
  });

  it('rejects hardlinks to files outside the archive', async () => {
    await expectRejected(
      await archiveFile('hard.tgz', rawTarGz([{ name: 'passwd', type: '1', linkname: '/etc/passwd' }])),
      /"passwd" is a hardlink to "\/etc\/passwd"/,
    );
    await expectRejected(
      await archiveFile('hard2.tgz', rawTarGz([{ name: 'x', type: '1', linkname: '../outside/secret' }])),
      /hardlink/,
    );
  });

  it.each([
    ['FIFO', '6'],
    ['character device', '3'],
    ['block device', '4'],
    ['sparse file', 'S'],
  ])('rejects a %s entry', async (_kind, type) => {
    await expectRejected(
      await archiveFile(
        'special.tgz',
        rawTarGz([
          { name: 'ok', data: Buffer.from('x') },
          { name: 'special', type },
        ]),
      ),
      /"special" is a \w+ entry/,
    );
  });

  it('rejects a file-count bomb at maxFiles + 1 entries', async () => {
    const entries = Array.from({ length: 51 }, (_, i) => ({ name: `f${i}`, data: Buffer.from('x') }));
    await expectRejected(await archiveFile('count.tgz', rawTarGz(entries)), /more than 50 entries/, {
      maxFiles: 50,
      maxBytes: MB,
    });
  });

  it('rejects a truncated gzip and a gzip of random bytes', async () => {
    const whole = rawTarGz([
      { name: 'big.bin', data: Buffer.from(Array.from({ length: 100_000 }, (_, i) => (i * 7919) % 251)) },
    ]);
    await expectRejected(
      await archiveFile('cut.tgz', whole.subarray(0, Math.floor(whole.length / 2))),
      /corrupt|truncated/,
    );
    await expectRejected(
      await archiveFile('noise.tgz', gzipSync(Buffer.from(Array.from({ length: 4096 }, (_, i) => (i * 31) % 256)))),
      /corrupt|truncated/,
    );
  });

  it('rejects random bytes as an unsupported format', async () => {
    await expectRejected(
      await archiveFile('noise.bin', Buffer.from('this is not an archive at all')),
      /unsupported archive format/,
    );
  });
});

describe('extractArchive: hostile zip', () => {
  it.each([['../evil'], ['/abs'], ['C:\\x'], ['\\\\server\\x'], ['a/../../evil']])(
    'rejects the entry name %s',
    async (name) => {
      await expectRejected(
        await archiveFile('names.zip', await zipBuffer([{ name, data: Buffer.from('pwned') }])),
        /absolute path|escapes/,
        LIMITS,
        [path.join(sandbox, 'evil')],
      );
    },
  );

  it('rejects symlinks out of the archive and special files', async () => {
    await expectRejected(
      await archiveFile('link.zip', await zipBuffer([{ name: 'etc', data: Buffer.from('/etc'), mode: 0o120777 }])),
      /absolute path "\/etc"/,
    );
    const through = await zipBuffer([
      { name: 'up', data: Buffer.from('..'), mode: 0o120777 },
      { name: 'up/evil', data: Buffer.from('x') },
    ]);
    await expectRejected(await archiveFile('through.zip', through), /through the symlink "up"/, LIMITS, [
      path.join(sandbox, 'evil'),
    ]);
    await expectRejected(
      await archiveFile('fifo.zip', await zipBuffer([{ name: 'fifo', mode: 0o010644 }])),
      /"fifo" is a device, FIFO or socket/,
    );
  });

  it('rejects a zip whose headers claim a small size but inflate larger', async () => {
    const liar = claimUncompressedSize(await zipBuffer([{ name: 'small.txt', data: Buffer.alloc(2 * MB, 'a') }]), 100);
    await expectRejected(await archiveFile('liar.zip', liar), /corrupt|more than/);
  });

  it('rejects a truncated zip and too many entries', async () => {
    const whole = await zipBuffer([
      { name: 'a.txt', data: Buffer.from('hello') },
      { name: 'b.txt', data: Buffer.from('world') },
    ]);
    await expectRejected(await archiveFile('cut.zip', whole.subarray(0, whole.length - 30)), /corrupt|truncated/);
    await expectRejected(await archiveFile('many.zip', whole), /more than the limit of 1/, {
      maxFiles: 1,
      maxBytes: MB,
    });
  });
});

describe('extractArchive: byte bombs', () => {
  /** Extracts while sampling the bytes on disk under dest. */
  async function extractSamplingDisk(file: string) {
    let peak = 0;
    let done = false;
    const sampler = (async () => {
      while (!done) {
        const names = await readdir(dest, { recursive: true }).catch(() => [] as string[]);
        const sizes = await Promise.all(
          names.map((name) =>
            lstat(path.join(dest, name)).then(
              (s) => s.size,
              () => 0,
            ),
          ),
        );
        peak = Math.max(
          peak,
          sizes.reduce((a, b) => a + b, 0),
        );
        await new Promise((resolve) => setTimeout(resolve, 2));
      }
    })();
    const started = Date.now();
    const outcome = await extractArchive(file, dest, LIMITS).then(
      () => undefined,
      (err: unknown) => err,
    );
    const elapsed = Date.now() - started;
    done = true;
    await sampler;
    return { outcome, elapsed, peak };
  }

  it.each([
    ['tar.gz', async () => rawTarGz([{ name: 'zeros.bin', data: Buffer.alloc(50 * MB) }])],
    ['zip', async () => zipBuffer([{ name: 'zeros.bin', data: Buffer.alloc(50 * MB) }])],
    [
      'zip lying about its size',
      async () => claimUncompressedSize(await zipBuffer([{ name: 'zeros.bin', data: Buffer.alloc(50 * MB) }]), 1000),
    ],
  ])('aborts a 50 MB %s against a 10 MB limit quickly', async (_kind, build) => {
    const file = await archiveFile('bomb', await build());
    const { outcome, elapsed, peak } = await extractSamplingDisk(file);
    expect(outcome).toMatchObject({ code: 'bad_request' });
    expect(elapsed).toBeLessThan(3000);
    expect(peak).toBeLessThan(LIMITS.maxBytes);
    expect(existsSync(dest)).toBe(false);
  });
});

describe('extractArchive: destination', () => {
  it('refuses a non-empty destination without touching it', async () => {
    await mkdir(dest);
    await writeFile(path.join(dest, 'keep.txt'), 'mine');
    const file = await archiveFile('a.tgz', rawTarGz([{ name: 'x', data: Buffer.from('x') }]));
    await expect(extractArchive(file, dest, LIMITS)).rejects.toThrow(/not empty/);
    expect(await readFile(path.join(dest, 'keep.txt'), 'utf8')).toBe('mine');
  });
});
