import { readFileSync } from 'node:fs';
import { createLogStreamForwarder } from '../core/log-streams/forwarder.js';
import { createLogStreamSettings } from '../core/log-streams/settings.js';
import { createSyslogConnector } from '../integrations/syslog-sender.js';
import type { Logger } from '../lib/logger.js';
import type { SecretBox } from '../lib/secret-box.js';
import type { Logs } from '../observability/logs/index.js';
import type { Config } from '../model/settings.js';
import type { Repos } from '../store/repos/index.js';

/** Log streams: the API's settings, and the forwarder they tell of each change (started by startBackground). */
export function wireLogStreams(p: { config: Config; repos: Repos; box: SecretBox; logs: Logs; log: Logger }) {
  const { config, repos, box, logs, log } = p;
  const s = config.logStreams;
  const forwarder = createLogStreamForwarder({
    repo: repos.logStreams,
    box,
    connect: createSyslogConnector({
      allowPrivate: s.allowPrivate,
      extraCa: s.caFile ? readFileSync(s.caFile, 'utf8') : undefined,
      connectTimeoutMs: s.connectTimeoutMs,
      writeTimeoutMs: s.writeTimeoutMs,
    }),
    subscribe: (onRows) => logs.hub.subscribe({ onRows }),
    log,
    settings: {
      batch: 200,
      span: 10_000,
      saveMs: 1000,
      pollMs: 2000,
      backoffMinMs: s.backoffMinMs,
      backoffMaxMs: 60_000,
      refreshMs: 10_000,
      stopMs: 5000,
    },
  });
  const settings = createLogStreamSettings({
    repos,
    box,
    allowPrivate: s.allowPrivate,
    changed: () => void forwarder.reload(),
  });
  return { settings, forwarder };
}
export type LogStreams = ReturnType<typeof wireLogStreams>;
