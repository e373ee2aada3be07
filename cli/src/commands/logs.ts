import type { Command } from 'commander';
import { ok } from '../api.js';
import { CliError, EXIT } from '../errors.js';
import { followLogs, label, type LogEntry } from '../logs.js';
import { out, print } from '../output.js';
import { findService, session } from '../session.js';

interface LogsOptions {
  follow?: boolean;
  since?: string;
  level?: string[];
  type?: string[];
  search?: string;
  instance?: string[];
  limit: string;
  json?: boolean;
}

/** `--since 15m`, `2h`, `1d`, or an RFC 3339 time. */
export function parseSince(value: string, now = Date.now()): string {
  const relative = /^(\d+)(s|m|h|d)$/.exec(value);
  if (relative) {
    const seconds = { s: 1, m: 60, h: 3600, d: 86400 }[relative[2] as 's' | 'm' | 'h' | 'd'];
    return new Date(now - Number(relative[1]) * seconds * 1000).toISOString();
  }
  if (!Number.isNaN(Date.parse(value))) return new Date(value).toISOString();
  throw new CliError(
    `--since ${value}: give a duration (30s, 15m, 2h, 1d) or a time (2026-12-01T10:00:00Z)`,
    EXIT.USAGE,
  );
}

/** A line as people read logs: time, where it came from, the message with its own colours kept. */
function line(entry: LogEntry): string {
  const source = label(entry, 'instance') ?? label(entry, 'type') ?? '';
  return `${out.dim(entry.timestamp)} ${out.cyan(source)} ${entry.message}`;
}

const collect = (value: string, previous: string[] = []) => [...previous, value];

export function logsCommand(program: Command): void {
  program
    .command('logs [service]')
    .description("Show a service's logs (build, app and request logs), or follow them live with -f")
    .option('-f, --follow', 'keep streaming new lines (over a WebSocket; reconnects without gaps)')
    .option('--since <when>', 'from this long ago (15m, 2h, 1d) or this time', '1h')
    .option('--level <level>', 'only this level (repeatable): debug, info, warning, error', collect)
    .option('--type <type>', 'only this type (repeatable): app, build, request', collect)
    .option('--instance <id>', 'only this instance (repeatable)', collect)
    .option('--search <text>', 'only lines containing this text (* wildcards, or /regex/)')
    .option('--limit <n>', 'without -f: at most this many lines', '100')
    .option('--json', 'one JSON log entry per line')
    .action(async (ref: string | undefined, options: LogsOptions, command: Command) => {
      const current = session(command);
      const service = await findService(current, ref);
      const filters = {
        resource: [service.id],
        level: options.level,
        type: options.type,
        instance: options.instance,
        text: options.search ? [options.search] : undefined,
      };
      const startTime = parseSince(options.since ?? '1h');
      const emit = (entry: LogEntry) => print(options.json ? JSON.stringify(entry) : line(entry));
      if (options.follow) {
        const query = new URLSearchParams({ startTime });
        for (const [name, values] of Object.entries(filters))
          for (const value of values ?? []) query.append(name, value);
        const stop = new AbortController();
        process.once('SIGINT', () => stop.abort());
        await followLogs(current.context, query, emit, stop.signal);
        return;
      }
      const limit = Math.min(Math.max(Number(options.limit) || 100, 1), 100);
      // The newest `limit` lines since then, printed oldest first, as `tail` does.
      const page = await ok(
        current.api.GET('/v1/logs', { params: { query: { ...filters, startTime, direction: 'backward', limit } } }),
      );
      for (const entry of page.logs.reverse()) emit(entry);
    });
}
