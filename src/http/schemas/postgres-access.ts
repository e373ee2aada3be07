import { Type } from '@sinclair/typebox';
import { POSTGRES_PLANS } from '../../core/datastores/plans.js';
import type { PostgresExportRow } from '../../store/repos/postgres-exports.js';
import { literalUnion, Name } from './common.js';

/**
 * Render's list item of `GET /postgres/{id}/export` (id, createdAt, url), plus Slipway's state, size and expiry; the
 * same for a key-value instance's exports.
 */
export const DatastoreExport = Type.Object({
  id: Type.String(),
  createdAt: Type.String({ format: 'date-time' }),
  url: Type.Optional(
    Type.String({ description: 'Where to download it (authenticated, developers and up), once it is done' }),
  ),
  status: Type.Union([Type.Literal('running'), Type.Literal('done'), Type.Literal('failed')]),
  sizeBytes: Type.Optional(Type.Integer()),
  finishedAt: Type.Optional(Type.String({ format: 'date-time' })),
  expiresAt: Type.String({ format: 'date-time', description: 'Removed then (7 days after it was made)' }),
  error: Type.Optional(Type.String({ description: 'Why it failed' })),
});

export const exportBody = (row: PostgresExportRow, downloadUrl: string) => ({
  id: row.id,
  createdAt: row.createdAt.toISOString(),
  ...(row.status === 'done' ? { url: downloadUrl } : {}),
  status: row.status,
  ...(row.sizeBytes !== null ? { sizeBytes: row.sizeBytes } : {}),
  ...(row.finishedAt ? { finishedAt: row.finishedAt.toISOString() } : {}),
  expiresAt: row.expiresAt.toISOString(),
  ...(row.error ? { error: row.error } : {}),
});

/** Render's item of `GET /postgres/{id}/credentials`. */
export const PostgresCredential = Type.Object({
  username: Type.String(),
  default: Type.Boolean(),
  createdAt: Type.Optional(Type.String({ format: 'date-time' })),
  openConnections: Type.Integer(),
});

/** Render's body; the name is checked by the core (a 400 naming `username`), not only by its length here. */
export const CredentialPOST = Type.Object({
  username: Type.String({ minLength: 1, maxLength: 63, description: 'Lower-case letters, digits and _' }),
});

/** Render answers 202 without a body; Slipway's carries the password, shown this once and kept nowhere. */
export const CreatedCredential = Type.Composite([
  PostgresCredential,
  Type.Object({ password: Type.String({ description: 'Shown once: Slipway does not keep it' }) }),
]);

/** Render's body of `GET /postgres/{id}/recovery`, plus the window's end (now: the newest restorable instant). */
export const RecoveryInfo = Type.Object({
  recoveryStatus: Type.Union([
    Type.Literal('AVAILABLE'),
    Type.Literal('BACKUP_NOT_READY'),
    Type.Literal('NOT_AVAILABLE'),
  ]),
  startsAt: Type.Optional(Type.String({ format: 'date-time', description: 'The earliest restorable instant' })),
  endsAt: Type.Optional(Type.String({ format: 'date-time', description: 'The newest restorable instant (now)' })),
});

/** Render's body of `POST /postgres/{id}/recovery` (its Datadog fields are accepted and unused: no Datadog here). */
export const RecoveryPOST = Type.Object({
  restoreTime: Type.String({ format: 'date-time' }),
  restoreName: Type.Optional(Name),
  plan: Type.Optional(literalUnion(POSTGRES_PLANS)),
  environmentId: Type.Optional(Type.String({ maxLength: 64 })),
  datadogApiKey: Type.Optional(Type.String({ maxLength: 256 })),
  datadogSite: Type.Optional(Type.String({ maxLength: 64 })),
});
