/**
 * The router process (see files.ts): `node main.js <dir>`. Started by the API (index.ts), detached, and left running
 * when the API stops. It serves from the last update it was sent (kept in state.json, so a restarted router process
 * serves at once), writes one JSON line per request to access.log (tailed by the API), and answers on control.sock:
 * `GET /status`, and `PUT /state` with a new update. With `workers` > 1 this process is the primary of that many
 * worker processes (workers.ts), which serve; with one, it serves itself (serve.ts).
 */
import cluster from 'node:cluster';
import { readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import { daemonFiles, type DaemonSettings, type DaemonStatus } from './files.js';
import { createDaemonLog } from './output.js';
import { startServing, type Serving } from './serve.js';
import { serveAsWorker, startWorkers } from './workers.js';

const MAX_UPDATE_BYTES = 256 * 1024 * 1024;
const dir = process.argv[2];
if (!dir) throw new Error('usage: main.js <router dir>');
const files = daemonFiles(dir.replace(/\/router-node\/?$/, ''));
const settings = JSON.parse(readFileSync(files.settings, 'utf8')) as DaemonSettings;
const log = createDaemonLog();

if (cluster.isWorker) serveAsWorker(settings, files, log);
else await runPrimary();

async function runPrimary(): Promise<void> {
  let kept: string | undefined;
  try {
    kept = readFileSync(files.state, 'utf8');
  } catch {
    // first start: nothing routed until the API sends its table
  }
  const workers = settings.workers ?? 1;
  const serving: Serving =
    workers > 1 ? await startWorkers(workers, settings, log, kept) : await startServing(settings, files, log, kept);
  let generation = 0;

  function status(): DaemonStatus {
    const { ports } = serving;
    const actual = {
      ...settings,
      port: ports.http,
      ...(settings.https ? { https: { ...settings.https, port: ports.https ?? settings.https.port } } : {}),
    };
    return { pid: process.pid, generation, settings: actual, ports };
  }

  const control = http.createServer((req, res) => {
    const reply = (code: number, body: unknown) => {
      res.writeHead(code, { 'content-type': 'application/json' });
      res.end(JSON.stringify(body));
    };
    if (req.method === 'GET' && req.url === '/status') return reply(200, status());
    if (req.method !== 'PUT' || req.url !== '/state') return reply(404, { message: 'not found' });
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_UPDATE_BYTES) req.destroy();
      else chunks.push(chunk);
    });
    req.on('end', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      serving
        .load(text)
        .then(() => {
          // Kept for the next start of this process; written aside and renamed, so a crash never leaves half of it.
          writeFileSync(`${files.state}.next`, text, { mode: 0o600 });
          renameSync(`${files.state}.next`, files.state);
          generation++;
          reply(200, { generation });
        })
        .catch((err: Error) => {
          log.error({ err: err.message }, 'router: an update did not load');
          reply(400, { message: err.message });
        });
    });
  });
  rmSync(files.control, { force: true });
  await new Promise<void>((resolve) => control.listen(files.control, resolve));
  writeFileSync(files.pid, String(process.pid), { mode: 0o600 });
  log.info({ pid: process.pid, workers, ...serving.ports }, 'router: serving');

  // The API renames a grown access log and asks for a new one.
  process.on('SIGUSR1', () => serving.reopenLog());
  const stop = () => {
    control.close();
    void serving.close().then(() => process.exit(0));
  };
  process.on('SIGHUP', () => undefined); // no terminal to lose: it runs in a session of its own
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
}
