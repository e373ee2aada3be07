/** Longest message kept: a longer line is cut here (at a character boundary) and marked. */
const MAX_LINE_BYTES = 16 * 1024;
const TRUNCATED_MARK = ' …[truncated]';

const NEWLINE = 0x0a;
const PINO_LEVELS: Record<number, string> = {
  10: 'trace',
  20: 'debug',
  30: 'info',
  40: 'warn',
  50: 'error',
  60: 'fatal',
};
const LEVEL_NAMES = new Set(['trace', 'debug', 'info', 'notice', 'warn', 'warning', 'error', 'critical', 'fatal']);

/**
 * The level of a line: a JSON object's `level` (a name, or pino's numbers), else the
 * stream's default (stderr → error, stdout → info). Only the level is read from the line:
 * its other fields stay part of the message, so an app cannot set any other label.
 */
export function levelOf(message: string, fallback: string): string {
  if (!message.startsWith('{') || !message.includes('"level"')) return fallback;
  try {
    const level = (JSON.parse(message) as { level?: unknown }).level;
    if (typeof level === 'number') return PINO_LEVELS[level] ?? fallback;
    if (typeof level === 'string' && LEVEL_NAMES.has(level.toLowerCase()))
      return level.toLowerCase() === 'warning' ? 'warn' : level.toLowerCase();
  } catch {
    // not JSON after all: a plain line
  }
  return fallback;
}

/** Cuts `line` (UTF-8 bytes) to MAX_LINE_BYTES without splitting a character. */
function decodeCut(bytes: Buffer, total: number): string {
  if (total <= MAX_LINE_BYTES) return bytes.toString('utf8');
  let end = Math.min(bytes.length, MAX_LINE_BYTES);
  while (end > 0 && (bytes[end]! & 0xc0) === 0x80) end--; // back off continuation bytes
  return bytes.subarray(0, end).toString('utf8') + TRUNCATED_MARK;
}

/** What `take` did with one chunk. */
export interface Taken {
  lines: string[];
  /** Complete lines counted and dropped (over budget), and their bytes (newlines included). */
  dropped: number;
  droppedBytes: number;
  /** Complete lines seen (kept or dropped) and their bytes: a stream's average line length. */
  seenBytes: number;
}

/**
 * Splits a byte stream into lines. Lines are decoded only once complete, so a multi-byte
 * character split across two reads is never mangled. `consumed` counts the bytes of the
 * complete lines handed out: the offset to resume from (a partial line is read again).
 * Memory is bounded: of a very long line only the first MAX_LINE_BYTES are held.
 */
export function createLineSplitter() {
  let held: Buffer[] = [];
  let heldBytes = 0;
  /** Bytes of the current (unfinished) line seen so far, held or not. */
  let lineBytes = 0;
  let consumed = 0;

  function resetHeld() {
    held = [];
    heldBytes = 0;
    lineBytes = 0;
  }

  function hold(part: Buffer) {
    lineBytes += part.length;
    const room = MAX_LINE_BYTES + 4 - heldBytes; // a few bytes more, to find a character boundary
    if (room <= 0) return;
    const kept = part.length > room ? part.subarray(0, room) : part;
    held.push(Buffer.from(kept)); // a copy: the caller may reuse its buffer before the line ends
    heldBytes += kept.length;
  }

  /**
   * The complete lines of `chunk`: the first `keep` decoded; past them, the rest are only
   * counted and dropped when `dropRest` (over budget: no string is made), else left for the next
   * read (a bound on the work of one call: `position` then stops at that line's start).
   */
  function take(chunk: Buffer, keep: number, dropRest: boolean): Taken {
    const out: Taken = { lines: [], dropped: 0, droppedBytes: 0, seenBytes: 0 };
    let start = 0;
    for (let nl = chunk.indexOf(NEWLINE, start); nl !== -1; nl = chunk.indexOf(NEWLINE, start)) {
      const total = lineBytes + nl - start;
      if (out.lines.length < keep) {
        // A line whole in this chunk is decoded where it lies; only one begun in an earlier read was held.
        if (lineBytes === 0) out.lines.push(decodeCut(chunk.subarray(start, nl), total).replace(/\r$/, ''));
        else {
          hold(chunk.subarray(start, nl));
          out.lines.push(decodeCut(Buffer.concat(held, heldBytes), total).replace(/\r$/, ''));
        }
      } else if (dropRest) {
        out.dropped++;
        out.droppedBytes += total + 1;
      } else {
        return out; // the next read starts at `position`: this line's first unread byte
      }
      if (lineBytes) resetHeld();
      out.seenBytes += total + 1;
      consumed += total + 1;
      start = nl + 1;
    }
    if (start < chunk.length) hold(chunk.subarray(start));
    return out;
  }

  return {
    /** The complete lines in `chunk` (with what was held from before). */
    push: (chunk: Buffer): string[] => take(chunk, Infinity, false).lines,
    take,
    /** The unfinished last line, if any (the stream ended without a newline). */
    flush(): string[] {
      if (lineBytes === 0) return [];
      const line = decodeCut(Buffer.concat(held, heldBytes), lineBytes).replace(/\r$/, '');
      consumed += lineBytes; // there was no newline
      resetHeld();
      return [line];
    },
    /** Jumps to `offset` (a line start), forgetting the unfinished line: output skipped unread. */
    skipTo(offset: number) {
      resetHeld();
      consumed = offset;
    },
    get consumed() {
      return consumed;
    },
    /** Bytes read so far: consumed plus the unfinished line held. */
    get position() {
      return consumed + lineBytes;
    },
    set consumed(value: number) {
      consumed = value;
    },
  };
}
export type LineSplitter = ReturnType<typeof createLineSplitter>;
