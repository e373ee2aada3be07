import { close, read } from 'node:fs';
import { PassThrough, type Readable } from 'node:stream';
import yauzl from 'yauzl';

/** Read ahead this much at a time: the central directory is thousands of small reads (two per entry) one after another. */
const BLOCK_BYTES = 1024 * 1024;

/**
 * yauzl's file access with a read-ahead block. Its own reader pipes a new stream for every read, and it reads each
 * central directory record that way: a zip of 40,000 entries took seconds, mostly garbage collection, to be refused
 * at its last entry. Ranges larger than a block (file data) are read as asked.
 */
class ReadAheadReader extends yauzl.RandomAccessReader {
  private block: { start: number; data: Buffer } | undefined;

  constructor(
    private readonly fd: number,
    private readonly size: number,
  ) {
    super();
  }

  override _readStreamForRange(start: number, end: number): Readable {
    const out = new PassThrough();
    this.range(start, end).then(
      (data) => out.end(data),
      (err: Error) => out.destroy(err),
    );
    return out;
  }

  /** yauzl reads each central directory record through here: a copy out of the block, not a stream piped per read. */
  override read(
    buffer: Buffer,
    offset: number,
    length: number,
    position: number,
    callback: (err: Error | null, bytesRead?: number) => void,
  ): void {
    this.range(position, position + length).then(
      (data) => callback(null, data.copy(buffer, offset)),
      (err: Error) => callback(err),
    );
  }

  override close(callback: (err: Error | null) => void): void {
    close(this.fd, callback);
  }

  private async range(start: number, end: number): Promise<Buffer> {
    const cached = this.block;
    if (cached && start >= cached.start && end <= cached.start + cached.data.length)
      return cached.data.subarray(start - cached.start, end - cached.start);
    const length = Math.min(this.size - start, Math.max(end - start, BLOCK_BYTES));
    const data = await new Promise<Buffer>((resolve, reject) => {
      const buffer = Buffer.alloc(length);
      read(this.fd, buffer, 0, length, start, (err, bytesRead) =>
        err ? reject(err) : resolve(buffer.subarray(0, bytesRead)),
      );
    });
    if (end - start <= BLOCK_BYTES) this.block = { start, data };
    return data.subarray(0, end - start);
  }
}

/** Opens the zip at `fd` (which the returned ZipFile closes) with read-ahead. */
export function openZip(fd: number, size: number, options: yauzl.Options): Promise<yauzl.ZipFile> {
  return yauzl.fromRandomAccessReaderPromise(new ReadAheadReader(fd, size), size, options);
}
