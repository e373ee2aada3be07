/**
 * RFC 5424 syslog messages in RFC 6587/5425 octet-counting frames (`<length> <message>`), as log streams send them.
 * Pure formatting: the connection is syslog-sender.ts.
 */

/** What one frame says about one log entry. */
export interface SyslogEntry {
  /** The log store's id: `[meta sequenceId]` (RFC 5424 §7.3.1), so a receiver can tell a resent entry. */
  id: number;
  /** Microseconds since the epoch. */
  tsUs: number;
  /** HOSTNAME: the service's name (Render's example line carries the service). */
  hostname: string;
  /** APP-NAME: the service's id. */
  appName: string;
  /** PROCID: the instance, when there is one. */
  procId?: string | null;
  /** MSGID: the entry's type (app, build, request). */
  msgId: string;
  level: string;
  message: string;
}

/** The SD-ID a token travels in, `[<token>@41058]`: Loggly's and SolarWinds' (Papertrail's) convention. */
export const TOKEN_PEN = 41058;
/** Facility: user-level messages. */
const FACILITY = 1;
const SEQUENCE_MAX = 2147483647;

/** A token must fit an SD-NAME (printable US-ASCII but `=`, space, `]`, `"`), and `@` would end it. */
export const TOKEN_PATTERN = /^[!#-<>?A-\\^-~]{1,256}$/;

/** Syslog severity of a log level (Render maps levels to priorities; unknown ones are informational). */
export function severityOf(level: string): number {
  switch (level.toLowerCase()) {
    case 'fatal':
    case 'critical':
    case 'crit':
      return 2;
    case 'error':
    case 'err':
      return 3;
    case 'warn':
    case 'warning':
      return 4;
    case 'notice':
      return 5;
    case 'debug':
    case 'trace':
      return 7;
    default:
      return 6;
  }
}

/** A header field: printable US-ASCII only (others become `_`), at most `max` characters, `-` when empty. */
function headerField(value: string | null | undefined, max: number): string {
  if (!value) return '-';
  const clean = value.slice(0, max).replace(/[^!-~]/g, '_');
  return clean || '-';
}

/** RFC 3339 with microseconds, in UTC. */
function timestamp(tsUs: number): string {
  const iso = new Date(Math.floor(tsUs / 1000)).toISOString(); // …T12:34:56.789Z
  return `${iso.slice(0, -1)}${String(Math.floor(tsUs % 1000)).padStart(3, '0')}Z`;
}

/** One entry as an RFC 5424 message; the token (checked against TOKEN_PATTERN by the caller) as an SD element. */
export function syslogMessage(e: SyslogEntry, token?: string): string {
  const pri = FACILITY * 8 + severityOf(e.level);
  const sequenceId = ((e.id - 1) % SEQUENCE_MAX) + 1;
  const sd = `${token ? `[${token}@${TOKEN_PEN}]` : ''}[meta sequenceId="${sequenceId}"]`;
  return (
    `<${pri}>1 ${timestamp(e.tsUs)} ${headerField(e.hostname, 255)} ${headerField(e.appName, 48)} ` +
    `${headerField(e.procId, 128)} ${headerField(e.msgId, 32)} ${sd} ${e.message}`
  );
}

/** Octet-counting framing: the message's length in UTF-8 bytes, a space, the message (as text: a batch is encoded once). */
export const frame = (message: string): string => `${Buffer.byteLength(message, 'utf8')} ${message}`;

/** A `host:port` endpoint (IPv6 in brackets), or undefined when it is not one. */
export function parseEndpoint(raw: string): { host: string; port: number } | undefined {
  const m = /^(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9.-]{1,253}):([0-9]{1,5})$/.exec(raw.trim());
  if (!m) return undefined;
  const port = Number(m[2]);
  if (port < 1 || port > 65535) return undefined;
  const host = m[1]!.startsWith('[') ? m[1]!.slice(1, -1) : m[1]!;
  return { host, port };
}
