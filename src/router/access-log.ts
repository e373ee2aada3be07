import {
  closeSync,
  fstatSync,
  openSync,
  readFileSync,
  readSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import type { RequestRecord } from './types.js';

/** One line of the access log: nginx's `slipway` log_format (nginx/config.ts), or the router process's (daemon/). */
export interface AccessLine {
  service: string;
  method: string;
  path: string;
  host: string;
  status: number;
  seconds: number;
  bytes: number;
  upstream: string;
  /** The router process knows the instance; for nginx's lines it is looked up by address. */
  instance?: string;
}

const quoted = JSON.stringify;
/**
 * A record as one access log line (AccessLine, newline-terminated), written field by field: the router process writes
 * one per request, and building an object to serialize cost it more than the rest of the line.
 */
export function accessLineOf(r: RequestRecord): string {
  const instance = r.instanceId ? `,"instance":${quoted(r.instanceId)}` : '';
  return (
    `{"service":${quoted(r.serviceId)},"method":${quoted(r.method)},"path":${quoted(r.path)},"host":${quoted(r.host)},` +
    `"status":${r.statusCode},"seconds":${r.durationMs / 1000},"bytes":${r.bytesOut},` +
    `"upstream":${quoted(r.upstream ?? '')}${instance}}\n`
  );
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
 * Tails a data plane's JSON access log into request records (request logs, traffic metrics, bandwidth). Read from where the
 * last read stopped; when the file grows large it is renamed and the writer is told to reopen (`reopen`, SIGUSR1), and the
 * rest of the old file is read before it is removed, so no line is lost.
 */
export function tailAccessLog(opts: {
  file: string;
  /** Where the read position is kept, so a restarted Slipway reports what nginx logged while it was down. */
  offsetFile: string;
  onRecord(record: RequestRecord): void;
  /** The instance behind an `address:port` nginx reports. */
  instanceAt?(upstream: string): string | undefined;
  reopen(): void;
  intervalMs?: number;
}) {
  // The data plane outlives Slipway: resume where the last Slipway stopped reading (the same file, not rotated since), so the
  // requests served while the API was down are logged and metered too; a first start begins at the end.
  let current: Cursor = { file: opts.file, offset: resumeAt(opts.file, opts.offsetFile), partial: '' };
  // The first read takes what was logged while Slipway was down (and a moment after its start).
  let backlog = true;
  let saved = '';
  const save = () => {
    const text = JSON.stringify({
      ino: inodeOf(current.file),
      offset: current.offset - Buffer.byteLength(current.partial),
    });
    if (text === saved) return;
    // Written aside and renamed: a kill -9 mid-write must not leave an empty file (read as "start at the end").
    writeFileSync(`${opts.offsetFile}.next`, text, { mode: 0o600 });
    renameSync(`${opts.offsetFile}.next`, opts.offsetFile);
    saved = text;
  };

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
    let line: AccessLine;
    try {
      line = JSON.parse(text) as AccessLine;
    } catch {
      return; // not a line of ours
    }
    if (!line.service) return;
    // After a retry nginx lists every upstream it tried ("a:1, b:2"): the last one answered.
    const upstream = line.upstream.split(',').pop()?.trim() ?? '';
    const instanceId = line.instance ?? (upstream ? opts.instanceAt?.(upstream) : undefined);
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
      ...(backlog ? { backlog } : {}),
    });
  }

  function poll(): void {
    readFrom(current);
    backlog = false;
    save();
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

function inodeOf(file: string): number | undefined {
  try {
    return statSync(file).ino;
  } catch {
    return undefined;
  }
}

function resumeAt(file: string, offsetFile: string): number {
  let size = 0;
  let ino: number | undefined;
  try {
    ({ size, ino } = statSync(file));
  } catch {
    return 0; // not written yet
  }
  try {
    const kept = JSON.parse(readFileSync(offsetFile, 'utf8')) as { ino?: number; offset?: number };
    if (kept.ino === ino && typeof kept.offset === 'number' && kept.offset >= 0 && kept.offset <= size)
      return kept.offset;
    return kept.ino === ino ? size : 0; // a file rotated while Slipway was down is read from its start
  } catch {
    return size;
  }
}
