import { and, asc, eq, sql } from 'drizzle-orm';
import type { PgColumn } from 'drizzle-orm/pg-core';
import type { Db } from '../db.js';
import { envGroupVars, envVars, type EnvVarRef } from '../schema/index.js';

export interface SealedVar {
  key: string;
  /** The value sealed with the secret box (AES-256-GCM); '' for a reference. */
  sealedValue: string;
  ref: EnvVarRef | null;
}

/**
 * Sealed key/value variables owned by one row of another table: a service's own variables
 * (env_vars) or an env group's (env_group_vars). Both tables have the same shape.
 */
function createSealedVarRepo(
  db: Db,
  table: typeof envVars | typeof envGroupVars,
  ownerColumn: 'serviceId' | 'groupId',
) {
  const t = table as typeof envVars; // same columns; only the owner column's name differs
  const owner = (table as unknown as Record<string, PgColumn>)[ownerColumn]!;
  const row = (ownerId: string, v: SealedVar) =>
    ({
      [ownerColumn]: ownerId,
      key: v.key,
      sealedValue: v.sealedValue,
      ref: v.ref,
    }) as unknown as typeof envVars.$inferInsert;
  const columns = { key: t.key, sealedValue: t.sealedValue, ref: t.ref };
  return {
    list(ownerId: string): Promise<SealedVar[]> {
      return db.select(columns).from(t).where(eq(owner, ownerId)).orderBy(asc(t.key));
    },
    async get(ownerId: string, key: string): Promise<SealedVar | undefined> {
      const [found] = await db
        .select(columns)
        .from(t)
        .where(and(eq(owner, ownerId), eq(t.key, key)))
        .limit(1);
      return found;
    },
    async put(ownerId: string, v: SealedVar): Promise<void> {
      await db
        .insert(t)
        .values(row(ownerId, v))
        .onConflictDoUpdate({
          target: [owner, t.key],
          set: { sealedValue: v.sealedValue, ref: v.ref, updatedAt: new Date() },
        });
    },
    /** Owners (service or group ids) with a variable referencing the datastore. */
    async referencing(datastoreId: string): Promise<string[]> {
      const rows = await db
        .selectDistinct({ owner })
        .from(t)
        .where(sql`${t.ref}->>'id' = ${datastoreId}`);
      return rows.map((r) => r.owner as string);
    },
    /** Replaces the whole set (call inside a transaction). */
    async replace(ownerId: string, rows: SealedVar[]): Promise<void> {
      await db.delete(t).where(eq(owner, ownerId));
      if (rows.length) await db.insert(t).values(rows.map((r) => row(ownerId, r)));
    },
    async delete(ownerId: string, key: string): Promise<boolean> {
      return (
        (
          await db
            .delete(t)
            .where(and(eq(owner, ownerId), eq(t.key, key)))
            .returning({ key: t.key })
        ).length > 0
      );
    },
  };
}
export type EnvVarRepo = ReturnType<typeof createSealedVarRepo>;

export const createEnvVarRepo = (db: Db) => createSealedVarRepo(db, envVars, 'serviceId');
export const createEnvGroupVarRepo = (db: Db) => createSealedVarRepo(db, envGroupVars, 'groupId');
