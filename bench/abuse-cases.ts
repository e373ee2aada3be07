/**
 * The abusive inputs of bench/abuse.ts, one entry each in CASES. A case may `prepare` data on the store before the
 * measured Slipway starts (it gets the store itself, in process), then `start`s its abuse against the running Slipway
 * as a tenant of its own, repeating it until `stop()`, which waits for what is in flight. To add a case (12 dead git
 * repositories, 3 builds at once, …), write one more AbuseCase and add it to CASES.
 */
import { log, signUp } from './lib.js';
import { startHeavyBuilds } from './abuse-builds.js';
import { hostAddress, startDeadGitRepos } from './abuse-git.js';
import { startWebhookBacklog } from './webhook-backlog.js';

export interface PrepareContext {
  url: string;
  executeSql(text: string, values?: unknown[]): Promise<unknown>;
}
export interface Abuse {
  /** Stops repeating the abuse and waits (a while at most) for the requests still in flight. */
  stop(): Promise<void>;
  /** What the abuse's own requests got, by status (429s and 413s are the point, not failures). */
  statuses(): Record<string, number>;
}
export interface AbuseCase {
  name: string;
  prepare?(ctx: PrepareContext): Promise<void>;
  start(url: string): Promise<Abuse>;
}

const SMOKE = process.env.BENCH_SMOKE === '1';

/** `concurrency` loops of `request` until stopped; statuses counted; stop() waits for them (at most `waitMs`). */
function repeat(concurrency: number, request: () => Promise<number>, waitMs = 120_000): Abuse {
  let running = true;
  const counts: Record<string, number> = {};
  const loops = Array.from({ length: concurrency }, async () => {
    while (running) {
      const status = await request().catch(() => 0); // 0: the request failed outright
      counts[status] = (counts[status] ?? 0) + 1;
    }
  });
  return {
    async stop() {
      running = false;
      const settled = Promise.all(loops).then(() => true);
      const timedOut = new Promise<boolean>((r) => setTimeout(() => r(false), waitMs).unref());
      if (!(await Promise.race([settled, timedOut]))) log(`abuse still in flight after ${waitMs / 1000} s`);
    },
    statuses: () => ({ ...counts }),
  };
}

/** The query: eight different `/(x*)…y/` values of 62 groups each, over LOG_LINES stored lines. */
const LOG_LINES = Number(process.env.BENCH_ABUSE_LOG_LINES || 100_000);
const LINE_BYTES = SMOKE ? 300 : 1000;
const WORST_TEXT = [...'yzwvutsr'].map((last) => `/${'(x*)'.repeat(62)}${last}/`);

function logRegex(): AbuseCase {
  let attacker: { headers: Record<string, string>; workspaceId: string; serviceId: string } | undefined;
  return {
    name: `log regex (${LOG_LINES / 1000}k lines of ${LINE_BYTES} B)`,
    async prepare({ url, executeSql }) {
      const { headers, workspaceId, call } = await signUp(url);
      const created = await call('POST', '/v1/services', {
        type: 'web_service',
        name: 'attacker',
        autoDeploy: 'no',
        serviceDetails: { runtime: 'node' },
      });
      attacker = { headers, workspaceId, serviceId: created.service.id };
      const started = Date.now();
      for (let from = 0; from < LOG_LINES; from += 10_000)
        await executeSql(
          `insert into logs (workspace_id, resource_id, type, level, message, timestamp)
           select $1, $2, 'app', 'info', n || ' ' || repeat('x', $3::int), now() - interval '50 minutes' + n * interval '20 milliseconds'
           from generate_series($4::int, $5::int) n`,
          [workspaceId, attacker.serviceId, LINE_BYTES, from, Math.min(LOG_LINES, from + 10_000) - 1],
        );
      await executeSql('analyze logs');
      log(`stored ${LOG_LINES} log lines in ${((Date.now() - started) / 1000).toFixed(1)} s`);
    },
    async start(url) {
      const { headers, workspaceId, serviceId } = attacker!;
      const query = [`ownerId=${workspaceId}`, `resource=${serviceId}`, 'limit=100']
        .concat(WORST_TEXT.map((t) => `text=${encodeURIComponent(t)}`))
        .join('&');
      return repeat(4, async () => {
        const res = await fetch(`${url}/v1/logs?${query}`, { headers });
        await res.arrayBuffer();
        return res.status;
      });
    },
  };
}

/** A 10 MB render.yaml the parser takes seconds and gigabytes over, sent to validation again and again. */
function blueprintFile(): AbuseCase {
  const size = 10 * 1024 * 1024 - 100;
  const unit = '  - name: s\n    type: web\n    runtime: node\n';
  const file = 'services:\n' + unit.repeat(Math.floor((size - 10) / unit.length));
  return {
    name: 'blueprint file (10 MB)',
    async start(url) {
      const { headers, workspaceId } = await signUp(url);
      return repeat(3, async () => {
        const form = new FormData();
        form.append('ownerId', workspaceId);
        form.append('file', new Blob([file]), 'render.yaml');
        const res = await fetch(`${url}/v1/blueprints/validate`, { method: 'POST', body: form, headers });
        await res.arrayBuffer();
        return res.status;
      });
    },
  };
}

/** One workspace's webhooks to a receiver that never answers, with a burst of pings (bench/webhook-backlog.ts). */
function webhookBacklog(): AbuseCase {
  return {
    name: 'webhook backlog',
    async start(url) {
      const backlog = await startWebhookBacklog(url);
      return { stop: () => backlog.stop(), statuses: () => ({}) };
    },
  };
}

/** One workspace's 12 autoDeploy services on git servers that never answer (bench/abuse-git.ts). */
function deadGitRepos(): AbuseCase {
  return {
    name: '12 dead git repos',
    async start(url) {
      const dead = await startDeadGitRepos(url, hostAddress());
      return { stop: () => dead.stop(), statuses: () => ({}) };
    },
  };
}

/** One workspace's 3 builds of 1 GiB each at once (bench/abuse-builds.ts). */
function heavyBuilds(): AbuseCase {
  return {
    name: '3 builds of 1 GiB at once',
    async start(url) {
      const builds = await startHeavyBuilds(url, { builds: 3, mb: 1024 });
      return { stop: () => builds.stop(), statuses: () => ({}) };
    },
  };
}

export const CASES: AbuseCase[] = [logRegex(), blueprintFile(), webhookBacklog(), deadGitRepos(), heavyBuilds()];
