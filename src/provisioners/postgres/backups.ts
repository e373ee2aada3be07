import { chmodSync, existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { lookup } from 'node:dns/promises';
import path from 'node:path';
import type { BackupS3 } from '../../model/settings.js';
import { run, type Command } from '../../lib/exec.js';
import { writeRunUserFile } from '../server-output.js';
import type { Exit } from '../server-network.js';
import type { Placement, PostgresBackups, PostgresSpec } from '../types.js';
import { asRunUser, SUPERUSER, type RunContext } from './commands.js';
import { dirAccess, privateDir, type DatastoreLayout } from './local-files.js';

/**
 * Continuous archiving and point-in-time recovery of local Postgres servers with pgBackRest (docs/datastores.md,
 * "Backups and point-in-time recovery"). Each datastore has a repository of its own under
 * `<backup dir>/postgres/<id>/` (the run user's, 0700): the server's archive_command pushes every WAL segment there,
 * base backups are taken into it, and a recovery restores a new server's data dir from it. Every pgBackRest command runs
 * as the servers' run user, in a mount namespace that keeps only the dirs it needs (as the servers themselves run).
 * With SLIPWAY_BACKUP_S3_* the repository is `<prefix>/postgres/<id>` in the bucket instead, and that dir keeps its
 * config, logs and locks; the server's namespace then reaches the endpoint, and nothing else (docs/datastores.md,
 * "Backups on S3").
 */

const PGBACKREST_PATHS = ['/usr/bin/pgbackrest', '/usr/local/bin/pgbackrest'];
export const findPgbackrest = (): string | undefined => PGBACKREST_PATHS.find((file) => existsSync(file));

const COMMAND_TIMEOUT_MS = 6 * 3_600_000;
const SERVER_ENV = { PATH: '/usr/bin:/bin', LANG: 'C.UTF-8', LC_ALL: 'C.UTF-8' };

export interface BackupLayout {
  dir: string;
  conf: string;
  repo: string;
}
export const backupLayout = (backupDir: string, id: string): BackupLayout => {
  const dir = path.join(backupDir, 'postgres', id);
  return { dir, conf: path.join(dir, 'pgbackrest.conf'), repo: path.join(dir, 'repo') };
};

/** One argument for /bin/sh (archive_command runs through it). */
const shellWord = (value: string) => `'${value.replaceAll("'", `'\\''`)}'`;

/** What the server runs for each finished WAL segment (postgresql.conf's archive_command). */
export const archiveCommand = (pgbackrest: string, layout: BackupLayout, stanza: string): string =>
  [pgbackrest, `--config=${layout.conf}`, `--stanza=${stanza}`, 'archive-push', '%p']
    .map(shellWord)
    .join(' ')
    .replace(`'%p'`, '"%p"');

/** A bucket, and the passphrase of each datastore's repository in it. */
export type S3Repositories = BackupS3 & { cipherPass(id: string): string };

/**
 * Where the repository is: the local dir, or the datastore's path in the bucket, encrypted (AES-256) with a passphrase
 * of its own: the bucket's keys are shared by every datastore, and a bucket is someone else's storage.
 */
const repoLines = (layout: BackupLayout, id: string, s3: S3Repositories | undefined) =>
  s3
    ? [
        'repo1-type=s3',
        `repo1-path=${s3.prefix}/postgres/${id}`,
        `repo1-s3-bucket=${s3.bucket}`,
        `repo1-s3-endpoint=${s3.endpoint}`,
        `repo1-storage-port=${s3.port}`,
        `repo1-s3-region=${s3.region}`,
        `repo1-s3-key=${s3.accessKeyId}`,
        `repo1-s3-key-secret=${s3.secretAccessKey}`,
        `repo1-s3-uri-style=${s3.uriStyle}`,
        ...(s3.caFile ? [`repo1-storage-ca-file=${s3.caFile}`] : []),
        'repo1-cipher-type=aes-256-cbc',
        `repo1-cipher-pass=${s3.cipherPass(id)}`,
      ]
    : [`repo1-path=${layout.repo}`];

/** The repository's config: where it is, how long full backups are kept, and how to reach the server (its socket). */
function configText(p: {
  repo: string[];
  layout: BackupLayout;
  stanza: string;
  pgdata: string;
  socketDir: string;
  port: number;
  retentionDays: number;
}): string {
  return [
    '# Written by Slipway before every backup and start of the datastore.',
    '[global]',
    ...p.repo,
    `repo1-retention-full-type=time`,
    `repo1-retention-full=${p.retentionDays}`,
    `log-path=${path.join(p.layout.dir, 'log')}`,
    `lock-path=${path.join(p.layout.dir, 'lock')}`,
    `spool-path=${path.join(p.layout.dir, 'spool')}`,
    'log-level-console=warn',
    'log-level-file=info',
    'start-fast=y',
    'compress-type=lz4',
    '',
    `[${p.stanza}]`,
    `pg1-path=${p.pgdata}`,
    `pg1-socket-path=${p.socketDir}`,
    `pg1-port=${p.port}`,
    `pg1-user=${SUPERUSER}`,
    '',
  ].join('\n');
}

export interface RecoveryWindow {
  /** The earliest restorable instant: the end of the oldest base backup. */
  startsAt: Date;
  /** The newest base backup's end. */
  lastBackupAt: Date;
}

/** pgBackRest for the local provisioner: its repository per datastore, and the commands on it. */
export function createLocalBackups(opts: {
  ctx: RunContext;
  pgbackrest: string;
  backupDir: string;
  s3?: S3Repositories | undefined;
  layoutOf: (id: string) => DatastoreLayout;
}) {
  const { ctx, pgbackrest, s3 } = opts;
  const layout = (id: string) => backupLayout(opts.backupDir, id);

  async function pgbackrestRun(id: string, args: string[], keep: { own: string; others: string[] }) {
    const l = layout(id);
    const cmd: Command = {
      file: pgbackrest,
      args: [`--config=${l.conf}`, `--stanza=${id}`, ...args],
      env: SERVER_ENV,
      cwd: '/',
    };
    const result = await run(asRunUser(ctx, dirAccess(ctx, keep.own, keep.others), cmd), {
      timeoutMs: COMMAND_TIMEOUT_MS,
    });
    if (result.exitCode !== 0)
      throw new Error(
        `pgbackrest ${args[0]} failed (exit ${result.exitCode ?? result.signal}): ${result.output.trim().slice(-2000)}`,
      );
    return result.output;
  }
  /** A command on the server of `spec` (its data dir, socket and repository). */
  const onServer = (spec: PostgresSpec, args: string[]) => {
    const server = opts.layoutOf(spec.id);
    return pgbackrestRun(spec.id, args, { own: server.pgdata, others: [server.socketDir, layout(spec.id).dir] });
  };

  const methods = {
    layout,
    /** The server's archive_command, and the dirs its server must see: its repository (and a source's, restoring). */
    archiving(spec: PostgresSpec) {
      const own = layout(spec.id);
      return {
        command: archiveCommand(pgbackrest, own, spec.id),
        dirs: [own.dir, ...(spec.restoredFrom ? [layout(spec.restoredFrom.datastoreId).dir] : [])],
      };
    },
    /** Writes the repository's dir and config (before the server starts, whose archive_command reads it). */
    prepare(spec: PostgresSpec, port: number) {
      const l = layout(spec.id);
      const server = opts.layoutOf(spec.id);
      // Slipway's, traversable (not listable) by the run user, who owns each datastore's own 0700 dir below: so a
      // backup dir outside the data dir (another disk) is reachable to the servers too.
      for (const dir of [path.dirname(path.dirname(l.dir)), path.dirname(l.dir)]) {
        privateDir(ctx, dir, false);
        chmodSync(dir, 0o711);
      }
      for (const dir of [l.dir, path.join(l.dir, 'log'), path.join(l.dir, 'lock'), path.join(l.dir, 'spool')])
        privateDir(ctx, dir, true);
      const text = configText({
        repo: repoLines(l, spec.id, s3),
        layout: l,
        stanza: spec.id,
        pgdata: server.pgdata,
        socketDir: server.socketDir,
        port,
        retentionDays: spec.backupRetentionDays ?? 0,
      });
      if (!existsSync(l.conf) || readFileSync(l.conf, 'utf8') !== text) writeRunUserFile(l.conf, text, ctx.runAs);
    },
    /** A full base backup (the stanza is made first, once); pgBackRest then expires what is past the retention. */
    async backup(spec: PostgresSpec) {
      await onServer(spec, ['stanza-create']);
      await onServer(spec, ['backup', '--type=full']);
    },
    /**
     * Makes everything up to now restorable: the caller committed a transaction just before (a recovery to a time
     * needs a commit after it), and `check` switches the WAL segment and waits until it is archived.
     */
    seal: (spec: PostgresSpec) => onServer(spec, ['check']),
    /** The window its base backups and archive allow, or undefined before the first backup. */
    async window(id: string): Promise<RecoveryWindow | undefined> {
      if (!existsSync(layout(id).conf)) return undefined;
      const out = await pgbackrestRun(id, ['info', '--output=json'], { own: layout(id).dir, others: [] });
      const [stanza] = JSON.parse(out) as Array<{ backup?: Array<{ timestamp: { stop: number } }> }>;
      const backups = stanza?.backup ?? [];
      if (!backups.length) return undefined;
      return {
        startsAt: new Date(backups[0]!.timestamp.stop * 1000),
        lastBackupAt: new Date(backups.at(-1)!.timestamp.stop * 1000),
      };
    },
    /** Restores `spec`'s data dir (empty, the run user's) from its source's repository, to its instant, then promoted. */
    async restore(spec: PostgresSpec & { restoredFrom: NonNullable<PostgresSpec['restoredFrom']> }) {
      const source = spec.restoredFrom.datastoreId;
      const target = opts.layoutOf(spec.id);
      rmSync(target.pgdata, { recursive: true, force: true }); // what an interrupted restore left
      privateDir(ctx, target.pgdata, true);
      // pgBackRest's time format: `YYYY-MM-DD HH:MM:SS.mmm+00`.
      const time = new Date(spec.restoredFrom.time).toISOString().replace('T', ' ').replace('Z', '+00');
      // To the end: a deleted database's whole archive (a time past its last commit would stop its recovery short).
      const to = spec.restoredFrom.toEnd
        ? ['--type=default']
        : ['--type=time', `--target=${time}`, '--target-action=promote'];
      await pgbackrestRun(source, ['restore', `--pg1-path=${target.pgdata}`, ...to], {
        own: target.pgdata,
        others: [layout(source).dir],
      });
    },
    /**
     * Where the server must reach its repository: the S3 endpoint's address (looked up now, by the host's resolver)
     * and port; nothing for a local one.
     */
    async exits(): Promise<Exit[]> {
      if (!s3) return [];
      return [{ address: (await lookup(s3.endpoint, { family: 4 })).address, port: s3.port }];
    },
    /**
     * The server's /etc/hosts, written to `file`: the endpoint's name at `inside`, where its namespace reaches the
     * address exits() gave (it has no resolver, and pgBackRest checks the certificate against that name).
     */
    pinEndpoint(file: string, inside: Exit): string {
      const lines = [
        `${inside.address} ${s3!.endpoint}`,
        ...(s3!.endpoint === 'localhost' ? [] : ['127.0.0.1 localhost']),
      ];
      writeFileSync(file, lines.join('\n') + '\n', { mode: 0o644 });
      return file;
    },
    /**
     * A server whose data dir is gone (a broken disk; Slipway restored on a new machine, its repositories on S3 or
     * another disk) comes back from its own repository, with everything archived; false when that holds no backup.
     */
    async restoreOwn(spec: PostgresSpec, port: number): Promise<boolean> {
      methods.prepare(spec, port);
      if (!(await methods.window(spec.id))) return false;
      const time = new Date().toISOString();
      await methods.restore({ ...spec, restoredFrom: { datastoreId: spec.id, time, toEnd: true } });
      return true;
    },
    /** Removes a datastore's repository (once a deleted one's window is over, or at once on a plan without backups). */
    async drop(id: string) {
      if (s3 && existsSync(layout(id).conf)) {
        // On S3 the bucket's objects go too: stanza-delete wants the stanza stopped first, and --force without a server.
        const own = { own: layout(id).dir, others: [] };
        await pgbackrestRun(id, ['stop'], own).catch(() => undefined);
        await pgbackrestRun(id, ['stanza-delete', '--force', '--pg1-path=/nonexistent'], own); // failed: tried again
      }
      rmSync(layout(id).dir, { recursive: true, force: true });
    },
  };
  return methods;
}
export type LocalBackups = ReturnType<typeof createLocalBackups>;

/**
 * The provisioner's PostgresBackups over `backups`: `archives` says whether a datastore's plan keeps backups, `query`
 * runs a statement on its server as the admin role.
 */
export function backupMethods(
  backups: LocalBackups,
  archives: (spec: PostgresSpec) => boolean,
  query: (spec: PostgresSpec, placement: Placement, text: string) => Promise<Array<Record<string, unknown>>>,
): PostgresBackups {
  return {
    async backup(spec) {
      if (archives(spec)) await backups.backup(spec);
    },
    recoveryWindow: (id) => backups.window(id),
    dropBackups: (id) => backups.drop(id),
    async seal(spec, placement) {
      await query(spec, placement, 'select txid_current()'); // a recovery to a time needs a commit after it
      await backups.seal(spec);
    },
    async archiveFailure(spec, placement) {
      const [row] = await query(
        spec,
        placement,
        `select last_failed_wal as wal, last_failed_time as at from pg_stat_archiver
          where last_failed_time is not null and (last_archived_time is null or last_failed_time > last_archived_time)`,
      );
      return row ? { wal: String(row.wal), at: new Date(row.at as string) } : undefined;
    },
  };
}
