import { Type } from '@sinclair/typebox';
import type { SyncResult } from '../../core/blueprints/sync.js';
import type { BlueprintResourceRow, BlueprintRow, BlueprintSyncRow } from '../../store/repos/blueprints.js';

const Position = {
  path: Type.Optional(Type.String({ description: 'The field, e.g. services[0].plan' })),
  line: Type.Optional(Type.Integer({ description: '1-based line in the file' })),
  column: Type.Optional(Type.Integer({ description: '1-based column in the file' })),
};

/** Render's answer to POST /blueprints/validate; `plan.warnings` is Slipway's: what it would not run of a valid file. */
export const BlueprintValidationBody = Type.Object(
  {
    valid: Type.Boolean(),
    errors: Type.Optional(Type.Array(Type.Object({ error: Type.String(), ...Position }))),
    plan: Type.Optional(
      Type.Object({
        services: Type.Array(Type.String()),
        databases: Type.Array(Type.String()),
        keyValue: Type.Array(Type.String()),
        envGroups: Type.Array(Type.String()),
        warnings: Type.Array(
          Type.Object({
            resource: Type.String({ description: 'The name of the resource it is about' }),
            warning: Type.String(),
            ...Position,
          }),
        ),
      }),
    ),
  },
  { title: 'blueprintValidation' },
);

const DateTime = Type.String({ format: 'date-time' });
const ResourceRef = Type.Object({ id: Type.String(), name: Type.String(), type: Type.String() });

/** Render's blueprint; `resources` are the ones it manages. */
export const BlueprintBody = Type.Object(
  {
    id: Type.String(),
    name: Type.String(),
    status: Type.String({ description: 'created | paused | in_sync | syncing | error' }),
    autoSync: Type.Boolean(),
    repo: Type.String({ description: "The repo, or '' for a blueprint read from uploaded archives" }),
    branch: Type.String(),
    path: Type.String(),
    lastSync: Type.Optional(DateTime),
    resources: Type.Array(ResourceRef),
    createdAt: DateTime,
    updatedAt: DateTime,
  },
  { title: 'blueprint' },
);

const SyncResultBody = Type.Object({
  kind: Type.String(),
  name: Type.String(),
  id: Type.Optional(Type.String()),
  action: Type.String({ description: 'created | updated | unchanged | skipped | failed' }),
  error: Type.Optional(Type.String()),
  warnings: Type.Optional(Type.Array(Type.String())),
  deployId: Type.Optional(Type.String()),
});

/** Render's blueprint sync, with Slipway's per-resource results and the reason of a failure. */
export const BlueprintSyncBody = Type.Object(
  {
    id: Type.String(),
    commit: Type.Object({ id: Type.String() }),
    state: Type.String({ description: 'running | success | error' }),
    startedAt: DateTime,
    completedAt: Type.Optional(DateTime),
    error: Type.Optional(Type.String()),
    resources: Type.Array(SyncResultBody),
  },
  { title: 'blueprintSync' },
);

const STATE = { running: 'running', succeeded: 'success', failed: 'error' } as const;

export const blueprintSyncBody = (s: BlueprintSyncRow) => ({
  id: s.id,
  commit: { id: s.commitId ?? '' },
  state: STATE[s.state],
  startedAt: s.startedAt.toISOString(),
  ...(s.finishedAt ? { completedAt: s.finishedAt.toISOString() } : {}),
  ...(s.error ? { error: s.error } : {}),
  resources: s.results as SyncResult[],
});

export const blueprintBody = (
  bp: BlueprintRow,
  resources: BlueprintResourceRow[],
  lastSync: BlueprintSyncRow | undefined,
) => ({
  id: bp.id,
  name: bp.name,
  status: bp.status,
  autoSync: bp.autoSync,
  repo: bp.repo ?? '',
  branch: bp.branch ?? '',
  path: bp.path,
  ...(lastSync?.finishedAt ? { lastSync: lastSync.finishedAt.toISOString() } : {}),
  resources: resources.map((r) => ({ id: r.resourceId, name: r.name, type: r.kind })),
  createdAt: bp.createdAt.toISOString(),
  updatedAt: bp.updatedAt.toISOString(),
});
