import { bigint, bigserial, doublePrecision, index, integer, pgTable, primaryKey, text } from 'drizzle-orm/pg-core';
import { LOG_TYPES } from '../../model/enums.js';
import { ts } from './columns.js';

// Logs and metric samples.

/**
 * Log entries (Render's log shape): app stdout/stderr, build and pre-deploy output, router
 * requests. `id` is the global insertion order, the resume point of a log stream.
 */
export const logs = pgTable(
  'logs',
  {
    id: bigserial('id', { mode: 'number' }).primaryKey(),
    workspaceId: text('workspace_id').notNull(),
    /** The service (label `resource`). */
    resourceId: text('resource_id').notNull(),
    instanceId: text('instance_id'),
    deployId: text('deploy_id'),
    type: text('type', { enum: LOG_TYPES }).notNull(),
    level: text('level').notNull(),
    message: text('message').notNull(),
    method: text('method'),
    path: text('path'),
    statusCode: integer('status_code'),
    host: text('host'),
    /** Request duration and bytes sent, for `request` entries. */
    durationMs: doublePrecision('duration_ms'),
    bytes: bigint('bytes', { mode: 'number' }),
    timestamp: ts('timestamp').notNull(),
  },
  (t) => [
    index('logs_resource_time_idx').on(t.resourceId, t.timestamp, t.id),
    index('logs_workspace_time_idx').on(t.workspaceId, t.timestamp, t.id),
    index('logs_time_idx').on(t.timestamp),
  ],
);

/** Where the log collector is in each instance's output files, so a restart neither loses nor repeats lines. */
export const logOffsets = pgTable('log_offsets', {
  /** `<instance id>:stdout` or `<instance id>:stderr`. */
  stream: text('stream').primaryKey(),
  offset: bigint('offset', { mode: 'number' }).notNull(),
  updatedAt: ts('updated_at').notNull().defaultNow(),
});

/** Message bytes stored per service, kept by the writes and deletes of logs (the per-service cap reads this, not the table). */
export const logSizes = pgTable('log_sizes', {
  resourceId: text('resource_id').primaryKey(),
  bytes: bigint('bytes', { mode: 'number' }).notNull(),
});

/**
 * CPU and memory samples per instance; `resolution` 0 = raw samples, 60 / 3600 = roll-ups
 * (averages, with max and min) made when raw samples expire.
 */
export const metricSamples = pgTable(
  'metric_samples',
  {
    serviceId: text('service_id').notNull(),
    instanceId: text('instance_id').notNull(),
    resolution: integer('resolution').notNull().default(0),
    timestamp: ts('timestamp').notNull(),
    /** Percent of one core. */
    cpuPercent: doublePrecision('cpu_percent').notNull(),
    cpuMax: doublePrecision('cpu_max'),
    cpuMin: doublePrecision('cpu_min'),
    /** RSS of the whole process tree. */
    memoryBytes: bigint('memory_bytes', { mode: 'number' }).notNull(),
    memoryMax: bigint('memory_max', { mode: 'number' }),
    memoryMin: bigint('memory_min', { mode: 'number' }),
    /** The instance cgroup's memory.current, where cgroups are available. */
    cgroupMemoryBytes: bigint('cgroup_memory_bytes', { mode: 'number' }),
  },
  (t) => [
    primaryKey({ columns: [t.instanceId, t.resolution, t.timestamp] }),
    index('metric_samples_service_idx').on(t.serviceId, t.resolution, t.timestamp),
  ],
);
