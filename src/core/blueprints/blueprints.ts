import { existsSync, mkdirSync, readdirSync, renameSync, rmSync } from 'node:fs';
import path from 'node:path';
import type { Readable } from 'node:stream';
import type { Logger } from '../../lib/logger.js';
import type { ArchiveLimits } from '../../lib/archive.js';
import { AppError, badRequest, conflict, notFound } from '../../lib/errors.js';
import { newId } from '../../lib/ids.js';
import type { BlueprintQuery, BlueprintRepo, BlueprintRow, BlueprintSyncRow } from '../../store/repos/blueprints.js';
import type { AuditLog } from '../audit.js';
import { receiveArchive } from '../deploys/sources.js';
import type { Events } from '../events.js';
import { overLimits } from './model.js';
import type { BlueprintParser } from './parse.js';
import { checkBlueprintPath, readBlueprintFile, type BlueprintSource, type RepoReader } from './source.js';
import { applyBlueprint, type SyncDeps, type SyncResult } from './sync.js';
import { versionWarnings, type VersionTools } from './version-warnings.js';

export interface BlueprintInput {
  name: string;
  repo?: string;
  branch?: string;
  path?: string;
  autoSync?: boolean;
}
export type BlueprintPatch = Partial<Pick<BlueprintInput, 'name' | 'autoSync' | 'path'>>;

/** Render's resource type for a tracked resource (GET /v1/blueprints/:id `resources[].type`). */
const RESOURCE_TYPE: Record<SyncResult['kind'], string | undefined> = {
  project: undefined,
  envGroup: 'environment_group',
  postgres: 'postgres',
  keyValue: 'key_value',
  service: undefined, // the service's own type
};
const familyOf = (type: string) =>
  type === 'environment_group'
    ? 'envGroup'
    : type === 'postgres'
      ? 'postgres'
      : type === 'key_value'
        ? 'keyValue'
        : 'service';

export function createBlueprints(deps: {
  repo: BlueprintRepo;
  sync: SyncDeps;
  /** A service's type by id (a tracked service's resource type). */
  serviceType: (id: string) => Promise<string | undefined>;
  events: Events;
  audit: AuditLog;
  log: Logger;
  checkRepo: (repo: string) => string;
  /** A token to clone the blueprint's repo with (the GitHub App's), when one applies. */
  gitToken?: (owner: { workspaceId: string; repo: string }) => Promise<string | undefined>;
  /** Where uploaded blueprint archives are kept. */
  archiveDir: string;
  limits: { maxUploadBytes: number; archive: ArchiveLimits };
  /** git and a disk for a repo's clone (source.ts). */
  repos: Omit<RepoReader, 'disk'> & { diskMb: number };
  /** Reads files in worker threads, within their limits (parse.ts). */
  parser: BlueprintParser;
  /** Checks the runtime versions a file asks for (version-warnings.ts); none: not checked. */
  versionTools?: VersionTools;
  /** A running sync beats this often; one whose beat stopped for `staleMs` is failed by the next sync or start. */
  heartbeatMs: number;
  staleMs: number;
}) {
  const { repo } = deps;
  const running = new Set<Promise<void>>();
  const archiveFile = (bp: Pick<BlueprintRow, 'id' | 'archiveId'>) =>
    path.join(deps.archiveDir, bp.id, `${bp.archiveId}.archive`);

  async function get(id: string): Promise<BlueprintRow> {
    const row = await repo.get(id);
    if (!row) throw notFound('blueprint');
    return row;
  }

  async function storeArchive(blueprintId: string, body: Readable) {
    const dir = path.join(deps.archiveDir, blueprintId);
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    const tmp = path.join(dir, `.incoming-${newId('source')}`);
    const received = await receiveArchive(body, tmp, {
      maxBytes: deps.limits.maxUploadBytes,
      archive: deps.limits.archive,
    });
    const archiveId = newId('source');
    renameSync(tmp, path.join(dir, `${archiveId}.archive`));
    return { archiveId, archiveSha256: received.sha256 };
  }

  /** Removes the archives a blueprint no longer reads (never while a sync may still read one). */
  function pruneArchives(bp: BlueprintRow) {
    const dir = path.join(deps.archiveDir, bp.id);
    for (const name of existsSync(dir) ? readdirSync(dir) : [])
      if (name.endsWith('.archive') && name !== `${bp.archiveId}.archive`)
        rmSync(path.join(dir, name), { force: true });
  }

  async function event(bp: BlueprintRow, type: string, details: Record<string, unknown>) {
    await deps.events.record({ workspaceId: bp.workspaceId, type, details: { blueprintId: bp.id, ...details } });
  }

  /** Reads the file, applies it, records what it did; never throws (the sync's state says how it ended). */
  async function run(bp: BlueprintRow, sync: BlueprintSyncRow, input: { envVars: Record<string, string> }) {
    const beat = setInterval(() => void repo.beat(sync.id).catch(() => undefined), deps.heartbeatMs);
    const results: SyncResult[] = [];
    let error: string | undefined;
    try {
      await event(bp, 'blueprint_sync_started', { syncId: sync.id });
      const source: BlueprintSource = bp.repo
        ? { kind: 'repo', repo: bp.repo, branch: bp.branch ?? undefined, path: bp.path }
        : { kind: 'archive', file: archiveFile(bp), sha256: bp.archiveSha256 ?? '', path: bp.path };
      const token = bp.repo ? await deps.gitToken?.({ workspaceId: bp.workspaceId, repo: bp.repo }) : undefined;
      const clones = path.join(deps.archiveDir, '.clones');
      const { text, commitId } = await readBlueprintFile(source, {
        archive: deps.limits.archive,
        token,
        repos: {
          ...deps.repos,
          disk: { image: path.join(clones, `${bp.id}.img`), dir: path.join(clones, bp.id), sizeMb: deps.repos.diskMb },
        },
      });
      await repo.saveResults(sync.id, { commitId });
      const { validation, model } = await deps.parser.read(bp.workspaceId, text);
      if (!model) {
        const first = validation.errors
          .slice(0, 5)
          .map((e) => `${e.path || 'file'} (line ${e.line ?? '?'}): ${e.error}`);
        throw new Error(`${bp.path} is not a valid Blueprint: ${first.join('; ')}`);
      }
      const tooMuch = overLimits(model);
      if (tooMuch) throw new Error(tooMuch);
      const warnings = [
        ...validation.plan.warnings,
        ...(await versionWarnings(validation.versions, deps.versionTools)),
      ];
      const archive = bp.repo ? undefined : { file: archiveFile(bp), sha256: bp.archiveSha256 ?? '' };
      const ctx = { workspaceId: bp.workspaceId, blueprint: { repo: bp.repo, branch: bp.branch, archive } };
      await applyBlueprint(deps.sync, ctx, model, input, async (result) => {
        const mine = warnings.filter((w) => w.resource === result.name).map((w) => w.warning);
        if (mine.length) result.warnings = [...(result.warnings ?? []), ...mine];
        results.push(result);
        const type =
          RESOURCE_TYPE[result.kind] ??
          (result.kind === 'service' && result.id ? await deps.serviceType(result.id) : undefined);
        if (result.id && type)
          await repo.track({ resourceId: result.id, blueprintId: bp.id, kind: type, name: result.name });
        await repo.saveResults(sync.id, { results });
      });
      // Resources gone from the file are detached (never deleted, as on Render).
      const inFile = new Set(results.map((r) => `${r.kind}:${r.name}`));
      const gone = (await repo.resources(bp.id)).filter((r) => !inFile.has(`${familyOf(r.kind)}:${r.name}`));
      await repo.untrack(
        bp.id,
        gone.map((r) => r.resourceId),
      );
      const failed = results.filter((r) => r.action === 'failed');
      if (failed.length)
        error = `${failed.length} resource(s) failed: ${failed.map((r) => `${r.name} (${r.error})`).join('; ')}`;
    } catch (err) {
      error = err instanceof Error ? err.message : String(err);
    } finally {
      clearInterval(beat);
    }
    const ended = await repo.finishSync(
      sync.id,
      { state: error ? 'failed' : 'succeeded', error, results },
      error ? 'error' : 'in_sync',
    );
    if (!ended) return; // failed as abandoned meanwhile: that sync's end is already recorded
    const now = await repo.get(bp.id);
    if (now) pruneArchives(now);
    // An archive uploaded while this sync ran (autoSync): the next sync applies it.
    if (now?.autoSync && !now.repo && now.archiveId !== bp.archiveId)
      void startSync(now).catch((err: unknown) =>
        deps.log.warn({ err, blueprintId: bp.id }, 'follow-up sync not started'),
      );
    await event(bp, 'blueprint_sync_ended', { syncId: sync.id, state: ended.state, ...(error ? { error } : {}) });
    await deps.audit.record({
      workspaceId: bp.workspaceId,
      event: 'BlueprintSyncEndedEvent',
      status: error ? 'error' : 'success',
      actor: { type: 'system', id: 'blueprint-sync' },
      metadata: { blueprintId: bp.id, syncId: sync.id, ...(error ? { error: error.slice(0, 500) } : {}) },
    });
  }

  /** Starts a sync in the background; 409 while another of the same blueprint runs. */
  async function startSync(
    bp: BlueprintRow,
    input: { envVars?: Record<string, string> } = {},
  ): Promise<BlueprintSyncRow> {
    if (bp.status === 'paused') throw conflict('the blueprint is paused: PATCH autoSync or resume it first');
    // A running sync whose process died (no pulse) is failed first, so it cannot hold the blueprint forever.
    await repo.failAbandoned(
      new Date(Date.now() - deps.staleMs),
      'Slipway stopped during this sync; the next sync carries on',
    );
    const sync = await repo.startSync({ id: newId('blueprintSync'), blueprintId: bp.id });
    if (!sync) {
      const other = await repo.runningSync(bp.id);
      throw conflict(`a sync of this blueprint is running (${other?.id ?? 'another'}); wait for it to end`);
    }
    await repo.update(bp.id, { status: 'syncing', lastSyncId: sync.id });
    const job = run(bp, sync, { envVars: input.envVars ?? {} })
      .catch((err: unknown) => deps.log.error({ err, syncId: sync.id }, 'blueprint sync crashed'))
      .finally(() => running.delete(job));
    running.add(job);
    return sync;
  }

  return {
    get,
    list: (q: BlueprintQuery) => repo.list(q),
    resources: (bp: BlueprintRow) => repo.resources(bp.id),
    lastSync: (bp: BlueprintRow) => (bp.lastSyncId ? repo.getSync(bp.lastSyncId) : Promise.resolve(undefined)),
    syncs: (bp: BlueprintRow, q: { beforeId?: string; limit: number }) => repo.listSyncs(bp.id, q),
    /** The blueprint that manages a resource, if one does. */
    async managerOf(resourceId: string): Promise<{ id: string; name: string } | undefined> {
      const tracked = await repo.managerOf(resourceId);
      const bp = tracked && (await repo.get(tracked.blueprintId));
      return bp ? { id: bp.id, name: bp.name } : undefined;
    },
    startSync,

    /** Creates the blueprint from a repo, or from an uploaded archive that holds the file, and starts its first sync. */
    async create(workspaceId: string, input: BlueprintInput, archive?: Readable) {
      if (!archive && !input.repo)
        throw badRequest('give a repo, or upload an archive (multipart file) that holds the file');
      const id = newId('blueprint');
      const stored = archive ? await storeArchive(id, archive) : undefined;
      try {
        const bp = await repo.insert({
          id,
          workspaceId,
          name: input.name,
          repo: input.repo ? deps.checkRepo(input.repo) : null,
          branch: input.branch ?? null,
          path: checkBlueprintPath(input.path ?? 'render.yaml'),
          autoSync: input.autoSync ?? true,
          ...stored,
        });
        const sync = await startSync(bp);
        return { blueprint: (await repo.get(id)) ?? bp, sync };
      } catch (err) {
        rmSync(path.join(deps.archiveDir, id), { recursive: true, force: true });
        if ((err as { code?: string }).code === '23505')
          throw conflict(`a blueprint named "${input.name}" already exists`);
        throw err;
      }
    },
    async update(bp: BlueprintRow, patch: BlueprintPatch): Promise<BlueprintRow> {
      const row = await repo
        .update(bp.id, {
          ...(patch.name !== undefined ? { name: patch.name } : {}),
          ...(patch.autoSync !== undefined ? { autoSync: patch.autoSync } : {}),
          ...(patch.path !== undefined ? { path: checkBlueprintPath(patch.path) } : {}),
        })
        .catch((err: { code?: string }) => {
          throw err.code === '23505' ? conflict(`a blueprint named "${patch.name}" already exists`) : err;
        });
      if (!row) throw notFound('blueprint');
      return row;
    },
    /** Disconnects the blueprint: its resources stay, unmanaged (Render's rule). */
    async remove(bp: BlueprintRow): Promise<void> {
      await repo.delete(bp.id);
      rmSync(path.join(deps.archiveDir, bp.id), { recursive: true, force: true });
    },
    /**
     * A push reached a repo (the GitHub App's webhook): the workspace's blueprints with autoSync on that repo and
     * branch sync. One already syncing is left to finish (its clone may predate the push: sync it by hand then).
     */
    async syncPushed(workspaceId: string, onRepo: (repo: string, branch: string | null) => boolean) {
      const started: string[] = [];
      for (const bp of await repo.list({ workspaceIds: [workspaceId], limit: 1000 })) {
        if (!bp.repo || !bp.autoSync || !onRepo(bp.repo, bp.branch)) continue;
        const sync = await startSync(bp).catch((err: unknown) => {
          if (err instanceof AppError && err.code === 'conflict') return undefined;
          throw err;
        });
        if (sync) started.push(sync.id);
      }
      return started;
    },
    /** A newer archive for an upload blueprint; with autoSync it syncs. */
    async upload(bp: BlueprintRow, archive: Readable): Promise<{ blueprint: BlueprintRow; sync?: BlueprintSyncRow }> {
      if (bp.repo) throw badRequest('this blueprint reads its file from a repo: push to it and sync');
      const row = (await repo.update(bp.id, await storeArchive(bp.id, archive)))!;
      if (!(await repo.runningSync(bp.id))) pruneArchives(row);
      if (!row.autoSync) return { blueprint: row };
      // A sync running now read the older archive: it starts the next one when it ends (run).
      const sync = await startSync(row).catch((err: unknown) => {
        if (err instanceof AppError && err.code === 'conflict') return undefined;
        throw err;
      });
      return { blueprint: (await repo.get(bp.id)) ?? row, ...(sync ? { sync } : {}) };
    },
    /** At start: syncs a dead process left running end as failed (all of them when this process owns the store). */
    async recover(ownsStore: boolean) {
      const ended = await repo.failAbandoned(
        ownsStore ? undefined : new Date(Date.now() - deps.staleMs),
        'Slipway stopped during this sync; the next sync carries on',
      );
      for (const sync of ended) await repo.update(sync.blueprintId, { status: 'error' });
      return ended.length;
    },
    /**
     * Render's validation of an uploaded render.yaml (POST /v1/blueprints/validate), off the event loop; a valid file's
     * warnings include the versions it asks for that this Slipway cannot honour.
     */
    async validate(workspaceId: string, file: Uint8Array) {
      const validation = await deps.parser.validate(workspaceId, file);
      if (validation.valid)
        validation.plan.warnings.push(...(await versionWarnings(validation.versions, deps.versionTools)));
      return validation;
    },
    async close() {
      await Promise.allSettled([...running]);
      await deps.parser.close();
    },
  };
}
export type Blueprints = ReturnType<typeof createBlueprints>;
