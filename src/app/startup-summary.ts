import type { MachineStatus } from '../core/machine-status.js';
import type { Logger } from '../lib/logger.js';
import type { RuntimeCapabilities } from '../runtime/types.js';

/** What Slipway says once it is up: where it answers, where its data is, and what this machine could not set up. */
export interface StartupFacts {
  apiUrl: string;
  publicUrl: string;
  docsUrl: string;
  routerUrl: string;
  /** The router's HTTPS listener, when there is one. */
  routerHttpsUrl?: string;
  /** Apps answer at `http://<slug>.<appsDomain>:<routerPort>`. */
  appsDomain: string;
  routerPort: number;
  /** The data plane: the Node router, or nginx in front of it (SLIPWAY_ROUTER). */
  routerKind: 'node' | 'nginx';
  /** The process that serves the apps and outlives the API's: nginx's master, or the Node router's own process. */
  routerProcess?: { pid: number; adopted: boolean };
  dataDir: string;
  storeKind: 'pglite' | 'postgres';
  /** The user apps run as (undefined: Slipway's own). */
  runAs: string | undefined;
  /** The same data GET /status answers with (src/core/machine-status.ts). */
  machine: MachineStatus;
}

const routerLine = ({ routerKind, routerProcess: p }: StartupFacts) =>
  p ? `${routerKind}, pid ${p.pid}${p.adopted ? ', adopted' : ''}` : routerKind;
const appsUrl = (facts: StartupFacts) => `http://<service>.${facts.appsDomain}:${facts.routerPort}`;

/** The `slipway is up` log line's fields (JSON logs). */
export const upFields = (facts: StartupFacts) => ({
  url: facts.apiUrl,
  docsUrl: facts.docsUrl,
  routerUrl: facts.routerUrl,
  ...(facts.routerHttpsUrl ? { routerHttpsUrl: facts.routerHttpsUrl } : {}),
  appsUrl: appsUrl(facts),
  router: facts.routerKind,
  store: facts.storeKind,
  dataDir: facts.dataDir,
});

/** Every note of the machine status: the runtime's (each says what is missing and how to get it), then datastores that are off. */
function notesOf(machine: MachineStatus): string[] {
  const datastores = Object.values(machine.datastores).flatMap((d) => (d.mode === 'off' && d.note ? [d.note] : []));
  const containers =
    'none' in machine.containers ? [`docker and image services are refused: ${machine.containers.none}`] : [];
  return [...machine.isolation.notes, ...containers, ...datastores];
}

/** Words of `text` in lines of at most `width` characters (a longer word gets a line of its own), the first prefixed by `first`, the rest by `rest`. */
function wrap(text: string, width: number, first: string, rest: string): string[] {
  const lines: string[] = [];
  let line = first;
  for (const word of text.split(/\s+/).filter(Boolean)) {
    const prefix = lines.length === 0 ? first : rest;
    if (line.length > prefix.length && line.length + 1 + word.length > width) {
      lines.push(line);
      line = rest + word;
    } else line += (line.length > prefix.length ? ' ' : '') + word;
  }
  lines.push(line);
  return lines;
}

function isolationLine({ isolation }: MachineStatus, runAs: string | undefined): string {
  const limits = Object.entries(isolation.limits)
    .filter(([, on]) => on)
    .map(([name]) => (name === 'buildDisk' ? 'build disk' : name));
  return [
    isolation.sandbox === 'bwrap' ? 'bwrap sandbox' : 'no sandbox',
    `apps run as ${runAs ?? "Slipway's user"}`,
    `network ${isolation.network}`,
    `limits: ${limits.length ? `${limits.join(', ')} (cgroups ${isolation.cgroups})` : 'none'}`,
  ].join(', ');
}

function datastoresLine({ datastores }: MachineStatus): string {
  const one = (name: string, d: MachineStatus['datastores']['postgres']) =>
    d.mode === 'off'
      ? `${name} off`
      : `${name} ${d.mode === 'local' ? 'local servers' : 'on an existing server'}${d.versions?.length ? ` (${d.versions.join(', ')})` : ''}`;
  return `${one('Postgres', datastores.postgres)}; ${one('key-value', datastores.keyValue)}`;
}

/** The human start-up summary printed when stdout is a terminal, instead of the start-up's JSON log lines. */
export function formatStartupSummary(facts: StartupFacts, width = 100): string {
  const row = (label: string, value: string) => wrap(value, width, `  ${label.padEnd(12)}`, ' '.repeat(14));
  const api = facts.publicUrl === facts.apiUrl ? facts.apiUrl : `${facts.apiUrl} (public URL ${facts.publicUrl})`;
  const lines = [
    'Slipway is up',
    ...row('API', api),
    ...row('API docs', facts.docsUrl),
    ...row('Router', `${facts.routerUrl} (${routerLine(facts)}), apps at ${appsUrl(facts)}`),
    ...(facts.routerHttpsUrl ? row('HTTPS', `${facts.routerHttpsUrl} (custom domains' certificates by SNI)`) : []),
    ...row('Data dir', facts.dataDir),
    ...row('Store', facts.storeKind === 'pglite' ? 'PGlite (embedded, in the data dir)' : 'Postgres (DATABASE_URL)'),
    ...row('Isolation', isolationLine(facts.machine, facts.runAs)),
    ...row('Datastores', datastoresLine(facts.machine)),
  ];
  const notes = notesOf(facts.machine);
  if (notes.length) {
    lines.push('', 'What this machine could not set up, and how to (GET /status lists these too):');
    for (const note of notes) lines.push(...wrap(note, width, '  - ', '    '));
  }
  lines.push('', 'Logs follow as JSON lines.');
  return `${lines.join('\n')}\n`;
}

/** The start-up report as JSON log lines (stdout not a terminal): what the runtime applies, then a warning per note. */
export function logMachineReport(
  log: Pick<Logger, 'info' | 'warn'>,
  capabilities: RuntimeCapabilities,
  machine: MachineStatus,
) {
  log.info(
    {
      sandbox: capabilities.sandbox,
      runAsUser: capabilities.runAsUser?.name ?? null,
      cgroups: capabilities.cgroups,
      network: capabilities.network,
    },
    `runtime: sandbox ${capabilities.sandbox}, apps run as ${capabilities.runAsUser?.name ?? "Slipway's user"}, limits via cgroups ${capabilities.cgroups}, network ${capabilities.network}`,
  );
  for (const note of capabilities.notes) log.warn({ note }, `runtime: ${note}`);
  for (const [kind, { note }] of Object.entries(machine.datastores))
    if (note) log.warn({ kind }, `${kind} datastores are off: ${note}`);
}
