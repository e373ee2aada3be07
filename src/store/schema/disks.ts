import { bigint, index, integer, pgTable, text, uniqueIndex } from 'drizzle-orm/pg-core';
import { createdAt, ts } from './columns.js';
import { services } from './services.js';
import { workspaces } from './workspaces.js';

/**
 * Render's persistent disks (docs/deploys.md, "Disks"): one per service, kept across its deploys. Its files live in
 * an image under the service's dir (runtime/local/service-disks.ts), mounted where its instances bind `mount_path`.
 */
export const disks = pgTable(
  'disks',
  {
    id: text('id').primaryKey(),
    workspaceId: text('workspace_id')
      .notNull()
      .references(() => workspaces.id, { onDelete: 'cascade' }),
    serviceId: text('service_id')
      .notNull()
      .references(() => services.id, { onDelete: 'cascade' }),
    name: text('name').notNull(),
    sizeGb: integer('size_gb').notNull(),
    mountPath: text('mount_path').notNull(),
    createdAt: createdAt(),
    updatedAt: ts('updated_at').notNull().defaultNow(),
  },
  (t) => [uniqueIndex('disks_service_key').on(t.serviceId), index('disks_workspace_idx').on(t.workspaceId, t.id)],
);

/** A disk's snapshots (Render's `snapshotKey` is the id): a copy of its image, daily and on request, kept 7 days. */
export const diskSnapshots = pgTable(
  'disk_snapshots',
  {
    id: text('id').primaryKey(),
    diskId: text('disk_id')
      .notNull()
      .references(() => disks.id, { onDelete: 'cascade' }),
    /** daily | manual. */
    kind: text('kind', { enum: ['daily', 'manual'] }).notNull(),
    /** The bytes the copy takes on the host's disk (its image is sparse). */
    sizeBytes: bigint('size_bytes', { mode: 'number' }).notNull(),
    createdAt: createdAt(),
  },
  (t) => [index('disk_snapshots_disk_idx').on(t.diskId, t.id)],
);
