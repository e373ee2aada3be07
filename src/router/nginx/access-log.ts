import { closeSync, fstatSync, openSync, readSync, renameSync, rmSync, statSync } from 'node:fs';
import type { RequestRecord } from '../router.js';

/** One line of the `slipway` log_format (config.ts). */
interface Line {
  service: string;
  method: string;
  path: string;
  host: string;
  status: number;
  seconds: number;
  bytes: number;
  upstream: string;
}

interface Cursor {
  file: string;
  offset: number;
  /** The start of a line whose end is not written yet. */
  partial: string;
}

const ROTATE_AT_BYTES = 32 * 1024 * 1024;
const MAX_READ_BYTES = 4 * 1024 * 1024;

/**
 * Tails nginx's JSON access log into request records (request logs, traffic metrics, bandwidth). Read from where the
 * last read stopped; when the file grows large it is renamed and nginx is told to reopen (`reopen`, SIGUSR1), and the
 * rest of the old file is read before it is removed, so no line is lost.
 */
export function tailAccessLog(opts: {
  file: string;
  onRecord(record: RequestRecord): void;
  /** The instance behind an `address:port` nginx reports. */
  instanceAt(upstream: string): string | undefined;
  reopen(): void;
  intervalMs?: number;
}) {
  // Lines written before this Slipway started were reported by the one before.
  let current: Cursor = { file: opts.file, offset: sizeOf(opts.file), partial: '' };

  function readFrom(at: Cursor): void {
    let fd: number;
    try {
      fd = openSync(at.file, 'r');
    } catch {
      return;
    }
    try {
      const size = fstatSync(fd).size;
      if (size < at.offset) at.offset = 0; // replaced by a new file
      while (at.offset < size) {
        const buffer = Buffer.alloc(Math.min(MAX_READ_BYTES, size - at.offset));
        const n = readSync(fd, buffer, 0, buffer.length, at.offset);
        if (n <= 0) break;
        at.offset += n;
        const lines = (at.partial + buffer.toString('utf8', 0, n)).split('\n');
        at.partial = lines.pop() ?? '';
        for (const line of lines) report(line);
      }
    } finally {
      closeSync(fd);
    }
  }

  function report(text: string): void {
    let line: Line;
    try {
      line = JSON.parse(text) as Line;
    } catch {
      return; // not a line of ours
    }
    if (!line.service) return;
    // After a retry nginx lists every upstream it tried ("a:1, b:2"): the last one answered.
    const upstream = line.upstream.split(',').pop()?.trim() ?? '';
    const instanceId = upstream ? opts.instanceAt(upstream) : undefined;
    opts.onRecord({
      serviceId: line.service,
      method: line.method,
      path: line.path,
      host: line.host,
      statusCode: line.status,
      durationMs: line.seconds * 1000,
      bytesOut: line.bytes,
      ...(upstream && upstream !== '-' ? { upstream } : {}),
      ...(instanceId ? { instanceId } : {}),
    });
  }

  function poll(): void {
    readFrom(current);
    if (current.offset < ROTATE_AT_BYTES) return;
    const old: Cursor = { ...current, file: `${opts.file}.1` };
    try {
      renameSync(opts.file, old.file);
      opts.reopen();
    } catch {
      return;
    }
    current = { file: opts.file, offset: 0, partial: '' };
    // nginx writes to the renamed file until it has reopened: read it to the end a moment later, then drop it.
    setTimeout(() => {
      readFrom(old);
      rmSync(old.file, { force: true });
    }, 1000).unref();
  }

  const timer = setInterval(poll, opts.intervalMs ?? 250);
  timer.unref();
  return {
    /** Reads what is there now (tests, and a last read at close). */
    flush: poll,
    stop: () => clearInterval(timer),
  };
}

function sizeOf(file: string): number {
  try {
    return statSync(file).size;
  } catch {
    return 0;
  }
}
