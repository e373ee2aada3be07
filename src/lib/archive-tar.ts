import { createReadStream } from 'node:fs';
import { pipeline } from 'node:stream';
import { createGunzip } from 'node:zlib';
import * as tar from 'tar';
import { AppError } from './errors.js';
import { ArchiveBudget, rejectArchive, showEntry, type ArchiveLimits } from './archive-budget.js';

/** Where readTarGz hands each entry (archive.ts's SafeTree, which checks and writes it). */
export interface EntrySink {
  readonly limits: ArchiveLimits;
  directory(raw: string): Promise<void>;
  file(raw: string, mode: number, declaredSize: number, openData: () => Promise<AsyncIterable<Buffer>>): Promise<void>;
  symlink(raw: string, target: string): Promise<void>;
  hardlink(raw: string, target: string): Promise<void>;
}

/** Entry types whose size is content to unpack. */
const CONTENT_TYPES = new Set(['File', 'OldFile', 'ContiguousFile']);

/** Headers, padding and pax records on top of the file bytes; bounds what gunzip may feed a parser. */
const maxTarBytes = (limits: ArchiveLimits) => limits.maxBytes + (limits.maxFiles + 1) * 8192 + 1024 * 1024;

/** The gunzipped bytes of `file`, refused once they pass what the limits allow. */
async function* gunzipped(file: string, limits: ArchiveLimits): AsyncGenerator<Buffer> {
  const decompressed = pipeline(createReadStream(file), createGunzip(), () => {});
  let tarBytes = 0;
  try {
    for await (const chunk of decompressed as AsyncIterable<Buffer>) {
      tarBytes += chunk.length;
      if (tarBytes > maxTarBytes(limits)) throw rejectArchive(`archive unpacks to more than ${limits.maxBytes} bytes`);
      yield chunk;
    }
  } finally {
    decompressed.destroy();
  }
}

/**
 * Reads only the headers (contents are skipped, nothing is written) and refuses at the first
 * entry past maxFiles or maxBytes, then stops reading: a bomb costs a scan up to that entry, not
 * the unpacking of everything before it. Any other fault is left to readTarGz to name.
 */
export async function scanTarGz(file: string, limits: ArchiveLimits): Promise<void> {
  const budget = new ArchiveBudget(limits);
  const parser = new tar.Parser({ strict: true, brotli: false, zstd: false });
  let refused: unknown;
  let done = false; // refused, or the parser has nothing more to say (end of archive, or an error)
  let stop!: () => void;
  const stopped = new Promise<void>((resolve) => {
    stop = () => {
      done = true;
      resolve();
    };
  });
  parser.on('entry', (entry: tar.ReadEntry) => {
    if (!done) {
      try {
        budget.countEntry(entry.path);
        if (CONTENT_TYPES.has(entry.type)) budget.addBytes(entry.size ?? 0, entry.path);
      } catch (err) {
        refused = err;
        stop();
      }
    }
    entry.resume();
  });
  for (const event of ['error', 'eof', 'end']) parser.on(event, stop);
  try {
    for await (const chunk of gunzipped(file, limits)) {
      if (!parser.write(chunk)) await Promise.race([new Promise((resolve) => parser.once('drain', resolve)), stopped]);
      if (done) break;
    }
  } catch (err) {
    if (err instanceof AppError) throw err; // gzip bomb; a corrupt gzip is readTarGz's to report
  }
  if (refused !== undefined) throw refused;
}

function addTarEntry(sink: EntrySink, entry: tar.ReadEntry, data: AsyncIterable<Buffer>) {
  switch (entry.type) {
    case 'Directory':
      return sink.directory(entry.path);
    case 'File':
    case 'OldFile':
    case 'ContiguousFile':
      return sink.file(entry.path, entry.mode ?? 0o644, entry.size, async () => data);
    case 'SymbolicLink':
      return sink.symlink(entry.path, entry.linkpath ?? '');
    case 'Link':
      return sink.hardlink(entry.path, entry.linkpath ?? '');
    default:
      throw rejectArchive(
        `archive entry ${showEntry(entry.path)} is a ${entry.type} entry; only files, directories and links are allowed`,
      );
  }
}

/** Yields `source` until `aborted` rejects, so a stalled entry stream cannot hang the extraction. */
async function* untilAborted<T>(source: AsyncIterable<T>, aborted: Promise<never>): AsyncGenerator<T> {
  const iterator = source[Symbol.asyncIterator]();
  try {
    for (;;) {
      const next = await Promise.race([iterator.next(), aborted]);
      if (next.done) return;
      yield next.value;
    }
  } finally {
    await iterator.return?.();
  }
}

/**
 * We gunzip ourselves and feed node-tar's Parser by hand (with backpressure): it only parses
 * headers; every entry is checked and written by the sink, never by node-tar's unpacker.
 */
export async function readTarGz(file: string, sink: EntrySink) {
  const parser = new tar.Parser({ strict: true, brotli: false, zstd: false });
  let failure: unknown;
  let abort!: (err: unknown) => void;
  const aborted = new Promise<never>((_, rejectAborted) => (abort = rejectAborted));
  aborted.catch(() => {});
  const fail = (err: unknown) => {
    failure ??= err;
    abort(failure);
  };
  let handled = Promise.resolve(); // entries are handled one at a time, in order
  let sawEof = false;
  parser.on('entry', (entry: tar.ReadEntry) => {
    handled = handled
      .then(() => (failure === undefined ? addTarEntry(sink, entry, untilAborted(entry, aborted)) : undefined))
      .catch(fail)
      .then(() => void entry.resume()); // an entry ends (and the parser moves on) only once its body, even empty, is read
  });
  parser.on('error', (err: Error) => fail(rejectArchive(`tar.gz archive is corrupt or truncated: ${err.message}`)));
  // node-tar skips oversized pax/long-name records and entry types it does not know (sparse files, tape labels…)
  parser.on('ignoredEntry', (entry: tar.ReadEntry) =>
    fail(
      rejectArchive(
        entry.meta
          ? `tar.gz archive has an oversized ${entry.type} header`
          : `archive entry ${showEntry(entry.path)} is a ${entry.type} entry; only files, directories and links are allowed`,
      ),
    ),
  );
  parser.on('eof', () => (sawEof = true));
  const ended = new Promise<void>((resolve) => parser.once('end', resolve));
  try {
    for await (const chunk of gunzipped(file, sink.limits)) {
      if (!parser.write(chunk)) await Promise.race([new Promise((resolve) => parser.once('drain', resolve)), aborted]);
      if (failure !== undefined || sawEof) break;
    }
    if (failure === undefined) {
      parser.end();
      await Promise.race([ended, aborted]);
    }
  } catch (err) {
    fail(err);
  }
  await handled; // never rejects; waits for in-flight writes so cleanup sees the final tree
  if (failure !== undefined) throw failure;
}
