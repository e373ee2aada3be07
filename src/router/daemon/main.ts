/**
 * The router process (see files.ts): `node main.js <dir>`. Started by the API (index.ts), detached, and left running
 * when the API stops. It serves from the last update it was sent (kept in state.json, so a restarted router process
 * serves at once), writes one JSON line per request to access.log (tailed by the API), and answers on control.sock:
 * `GET /status`, and `PUT /state` with a new update.
 */
import {
  createWriteStream,
  fstatSync,
  ftruncateSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
  type WriteStream,
} from 'node:fs';
import http from 'node:http';
import { createRouteTable } from '../route-table.js';
import { accessLineOf } from '../access-log.js';
import { startRouter } from '../router.js';
import { createCertificateStore } from '../tls.js';
import { daemonFiles, overSocket, type DaemonSettings, type DaemonStatus, type DaemonUpdate } from './files.js';

const MAX_UPDATE_BYTES = 256 * 1024 * 1024;
const dir = process.argv[2];
if (!dir) throw new Error('usage: main.js <router dir>');
const files = daemonFiles(dir.replace(/\/router-node\/?$/, ''));
const settings = JSON.parse(readFileSync(files.settings, 'utf8')) as DaemonSettings;
// stdout is router.log, opened for appending (index.ts): emptied when it grows large, so it never fills the disk.
const MAX_OUTPUT_BYTES = 16 * 1024 * 1024;
let outputBytes = (() => {
  try {
    return fstatSync(1).size;
  } catch {
    return 0;
  }
})();
const say = (level: string) => (fields: object, msg?: string) => {
  const text = JSON.stringify({ level, time: new Date().toISOString(), ...fields, msg }, (_key, value: unknown) =>
    value instanceof Error ? value.message : value,
  );
  outputBytes += text.length + 1;
  if (outputBytes > MAX_OUTPUT_BYTES) {
    outputBytes = text.length + 1;
    try {
      ftruncateSync(1, 0);
    } catch {
      // not a file (run by hand in a terminal)
    }
  }
  console.log(text);
};
const log = { debug: () => undefined, info: say('info'), warn: say('warn'), error: say('error') };

const table = createRouteTable(settings.appsDomain);
const certificates = settings.https ? createCertificateStore(settings.https.fallback) : undefined;
let generation = 0;
function load(update: DaemonUpdate) {
  table.importState(update.routes);
  const broken = certificates?.set(update.certificates) ?? [];
  if (broken.length) log.warn({ broken }, 'router: certificates that do not load are not served');
}
try {
  load(JSON.parse(readFileSync(files.state, 'utf8')) as DaemonUpdate);
} catch {
  // first start: nothing routed until the API sends its table
}

let accessLog: WriteStream = createWriteStream(files.accessLog, { flags: 'a', mode: 0o600 });
// Lines are written in batches (every 50 ms at most): one write per request would cost a syscall each.
let pending: string[] = [];
function flushAccessLog(): void {
  if (pending.length === 0) return;
  accessLog.write(pending.join(''));
  pending = [];
}
setInterval(flushAccessLog, 50).unref();

const router = await startRouter({
  host: settings.host,
  port: settings.port,
  resolve: table.resolve,
  timeouts: settings.timeouts,
  behindProxy: settings.behindProxy,
  onRequest: (record) => {
    pending.push(accessLineOf(record));
    if (pending.length >= 256) flushAccessLog();
  },
  log,
  ...(settings.https && certificates
    ? {
        https: {
          port: settings.https.port,
          certificates,
          ...(settings.https.redirectPort ? { redirectPort: settings.https.redirectPort } : {}),
        },
      }
    : {}),
  ...(settings.acme ? { acmeAnswer } : {}),
});
const ports = { http: router.port, ...(router.httpsPort !== undefined ? { https: router.httpsPort } : {}) };

/** The API holds the ACME orders; while it is down a challenge is simply not answered (the order is retried). */
async function acmeAnswer(token: string): Promise<string | undefined> {
  const reply = await overSocket(files.acme, 'GET', `/${token}`, undefined, 5000).catch(() => undefined);
  return reply?.status === 200 ? reply.text : undefined;
}

function status(): DaemonStatus {
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
    try {
      const text = Buffer.concat(chunks).toString('utf8');
      load(JSON.parse(text) as DaemonUpdate);
      // Kept for the next start of this process; written aside and renamed, so a crash never leaves half of it.
      writeFileSync(`${files.state}.next`, text, { mode: 0o600 });
      renameSync(`${files.state}.next`, files.state);
      generation++;
      reply(200, { generation });
    } catch (err) {
      log.error({ err: (err as Error).message }, 'router: an update did not load');
      reply(400, { message: (err as Error).message });
    }
  });
});
rmSync(files.control, { force: true });
await new Promise<void>((resolve) => control.listen(files.control, resolve));
writeFileSync(files.pid, String(process.pid), { mode: 0o600 });
log.info({ pid: process.pid, ...ports }, 'router: serving');

// The API renames a grown access log and asks for a new one.
process.on('SIGUSR1', () => {
  flushAccessLog();
  const old = accessLog;
  accessLog = createWriteStream(files.accessLog, { flags: 'a', mode: 0o600 });
  old.end();
});
const stop = () => {
  control.close();
  void router.close().then(() => {
    flushAccessLog();
    accessLog.end(() => process.exit(0));
  });
};
process.on('SIGHUP', () => undefined); // no terminal to lose: it runs in a session of its own
process.once('SIGTERM', stop);
process.once('SIGINT', stop);
