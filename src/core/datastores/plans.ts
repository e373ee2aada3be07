import { randomBytes } from 'node:crypto';
import { AppError } from '../../lib/errors.js';
import type { PlanSize } from '../../provisioners/types.js';

/**
 * Render's plan names and what they mean here. Postgres plans whose name carries a size
 * (`basic_1gb`, `pro_16gb`, ...) get that much memory; `custom` needs a human and is refused.
 */
const POSTGRES_NAMED: Record<string, number> = { free: 256, starter: 256, standard: 1024, pro: 4096, pro_plus: 8192 };
const KEY_VALUE: Record<string, PlanSize> = {
  free: { memoryMb: 25, maxConnections: 50 },
  starter: { memoryMb: 256, maxConnections: 250 },
  standard: { memoryMb: 1024, maxConnections: 1000 },
  pro: { memoryMb: 5120, maxConnections: 5000 },
  pro_plus: { memoryMb: 10240, maxConnections: 10000 },
};
export const POSTGRES_PLANS = [
  'free',
  'starter',
  'standard',
  'pro',
  'pro_plus',
  'basic_256mb',
  'basic_1gb',
  'basic_4gb',
  'pro_4gb',
  'pro_8gb',
  'pro_16gb',
  'pro_32gb',
  'pro_64gb',
  'accelerated_16gb',
  'accelerated_32gb',
  'accelerated_64gb',
] as const;
export const KEY_VALUE_PLANS = Object.keys(KEY_VALUE) as Array<keyof typeof KEY_VALUE>;
/** Render's maxmemoryPolicy values (underscores); Redis spells them with dashes. */
export const MAXMEMORY_POLICIES = [
  'noeviction',
  'allkeys_lfu',
  'allkeys_lru',
  'allkeys_random',
  'volatile_lfu',
  'volatile_lru',
  'volatile_random',
  'volatile_ttl',
] as const;
export type MaxmemoryPolicy = (typeof MAXMEMORY_POLICIES)[number];
export const redisPolicy = (policy: string) => policy.replaceAll('_', '-');

const invalid = (field: string, message: string) =>
  new AppError('validation_failed', `invalid ${field}`, [{ field, message }]);

export function postgresSize(plan: string): PlanSize {
  const sized = /_(\d+)(mb|gb)$/.exec(plan);
  const memoryMb = POSTGRES_NAMED[plan] ?? (sized ? Number(sized[1]) * (sized[2] === 'gb' ? 1024 : 1) : undefined);
  if (!memoryMb || !(POSTGRES_PLANS as readonly string[]).includes(plan))
    throw invalid('plan', `unknown plan "${plan}"; one of ${POSTGRES_PLANS.join(', ')}`);
  return { memoryMb, maxConnections: memoryMb <= 1024 ? 100 : memoryMb <= 8192 ? 200 : 500 };
}

/**
 * Days of point-in-time recovery a Postgres plan keeps (continuous archiving and daily base backups): none on free, as
 * on Render, and Render's 7 days (its professional window) on every paid plan here.
 */
export const postgresBackupDays = (plan: string): number => (plan === 'free' ? 0 : 7);

/** Render's key-value persistence: paid plans keep writes on disk (append-only, fsync every second); free ones do not. */
export const keyValuePersists = (plan: string): boolean => plan !== 'free';

export function keyValueSize(plan: string): PlanSize {
  const size = KEY_VALUE[plan];
  if (!size) throw invalid('plan', `unknown plan "${plan}"; one of ${KEY_VALUE_PLANS.join(', ')}`);
  return size;
}

/** Postgres identifiers we create: lower-case, so they never need quoting in a user's psql. */
const IDENTIFIER = /^[a-z_][a-z0-9_]{0,62}$/;
const RESERVED = /^(postgres|template[01]|pg_.*|public)$/;

export function checkIdentifier(field: string, value: string): string {
  if (!IDENTIFIER.test(value))
    throw invalid(field, 'must be 1-63 lower-case letters, digits and _, not starting with a digit');
  if (RESERVED.test(value)) throw invalid(field, `"${value}" is reserved`);
  return value;
}

/** Render's default names: the datastore's name made an identifier, plus a short random suffix. */
export function defaultIdentifier(name: string): string {
  const base =
    name
      .toLowerCase()
      .replace(/[^a-z0-9_]+/g, '_')
      .replace(/^[^a-z_]+/, '')
      .slice(0, 50) || 'db';
  const safe = RESERVED.test(base) ? `db_${base}` : base;
  return `${safe}_${randomBytes(3).toString('hex')}`;
}
