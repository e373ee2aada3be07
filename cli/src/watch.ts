import { ok } from './api.js';
import { getDeploy } from './commands/deploys.js';
import { CliError, EXIT } from './errors.js';
import { followLogs, label, type LogEntry } from './logs.js';
import { err, note } from './output.js';
import { DONE, type Service, type Session } from './session.js';

/**
 * Every 100 ms for the first 10 s (most deploys are done by then: 100 requests), then easing off to once a second, as
 * a credential's rate limit (1,200 a minute) is shared with whatever else uses it.
 */
const pollDelay = (elapsedMs: number) => Math.min(100 + Math.max(0, elapsedMs - 10_000) / 20, 1000);
/** How long a deploy's status may stay unreadable (Slipway restarting, 429, 503) before the watch gives up. */
const UNREACHABLE_MS = 60_000;

/**
 * Follows a deploy until it is done, printing its build's output to stderr as it is written (the log tail), and
 * then whatever of it the tail had not delivered yet (read back from `/v1/logs`), so a build's last lines, its error
 * among them, are never lost.
 */
export async function watchDeploy(current: Session, service: Service, deployId: string) {
  const { api, context } = current;
  let deploy = await getDeploy(api, service.id, deployId);
  const printed = new Set<string>();
  let lastTime = deploy.createdAt;
  const show = (entry: LogEntry) => {
    if (label(entry, 'deploy') !== deployId || printed.has(entry.id)) return;
    printed.add(entry.id);
    lastTime = entry.timestamp;
    process.stderr.write(`${err.dim('│')} ${entry.message}\n`);
  };
  const stop = new AbortController();
  const query = new URLSearchParams({ resource: service.id, type: 'build', startTime: deploy.createdAt });
  const streaming = followLogs(context, query, show, stop.signal).catch((error: unknown) =>
    note(err.yellow(`(build output unavailable: ${(error as Error).message})`)),
  );
  try {
    const started = Date.now();
    let failingSince: number | undefined;
    while (!DONE.has(deploy.status)) {
      await new Promise((resolve) => setTimeout(resolve, pollDelay(Date.now() - started)));
      try {
        deploy = await getDeploy(api, service.id, deployId);
        failingSince = undefined;
      } catch (error) {
        const transient = error instanceof CliError && [EXIT.ERROR, EXIT.UNREACHABLE].includes(error.exitCode as 1 | 6);
        failingSince ??= Date.now();
        if (!transient || Date.now() - failingSince > UNREACHABLE_MS) throw error;
      }
    }
  } finally {
    stop.abort();
    await streaming;
  }
  await catchUp(current, service, lastTime, show);
  return deploy;
}

/** The deploy's build lines from `since` on that the tail did not deliver (a few pages at most). */
async function catchUp(
  { api }: Session,
  service: Service,
  since: string,
  show: (entry: LogEntry) => void,
): Promise<void> {
  let startTime = since;
  for (let page = 0; page < 10; page++) {
    const result = await ok(
      api.GET('/v1/logs', {
        params: {
          query: { resource: [service.id], type: ['build'], startTime, direction: 'forward', limit: 100 },
        },
      }),
    ).catch(() => undefined); // the output is a courtesy: the deploy's status is the result
    if (!result) return;
    for (const entry of result.logs) show(entry);
    if (!result.hasMore) return;
    startTime = result.nextStartTime;
  }
}
