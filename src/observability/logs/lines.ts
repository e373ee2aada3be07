/** Longest message kept: a longer line is cut here (at a character boundary) and marked. */
const MAX_LINE_BYTES = 16 * 1024;
const TRUNCATED_MARK = ' …[truncated]';

const NEWLINE = 0x0a;
const PINO_LEVELS: Record<number, string> = { 10: 'trace', 20: 'debug', 30: 'info', 40: 'warn', 50: 'error', 60: 'fatal' };
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
    if (typeof level === 'string' && LEVEL_NAMES.has(level.toLowerCase())) return level.toLowerCase() === 'warning' ? 'warn' : level.toLowerCase();
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

  /** A complete line of `total` bytes (of which `bytes` holds at least the first MAX_LINE_BYTES). */
  function emit(out: string[], bytes: Buffer, total: number) {
    out.push(decodeCut(bytes, total).replace(/\r$/, ''));
    consumed += total + 1;
  }

  function finishLine(out: string[]) {
    emit(out, Buffer.concat(held, heldBytes), lineBytes);
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

  return {
    /** The complete lines in `chunk` (with what was held from before). */
    push(chunk: Buffer): string[] {
      const out: string[] = [];
      let start = 0;
      for (let nl = chunk.indexOf(NEWLINE, start); nl !== -1; nl = chunk.indexOf(NEWLINE, start)) {
        // A line whole in this chunk is decoded where it lies; only one begun in an earlier read was held.
        if (lineBytes === 0) emit(out, chunk.subarray(start, nl), nl - start);
        else {
          hold(chunk.subarray(start, nl));
          finishLine(out);
        }
        start = nl + 1;
      }
      if (start < chunk.length) hold(chunk.subarray(start));
      return out;
    },
    /** The unfinished last line, if any (the stream ended without a newline). */
    flush(): string[] {
      if (lineBytes === 0) return [];
      const out: string[] = [];
      finishLine(out);
      consumed -= 1; // there was no newline
      return out;
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
