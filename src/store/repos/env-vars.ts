import { asc, eq, and } from 'drizzle-orm';
import type { Db } from '../db.js';
import { envVars } from '../schema.js';

export type EnvVarRow = typeof envVars.$inferSelect;

export function createEnvVarRepo(db: Db) {
  return {
    list(serviceId: string): Promise<EnvVarRow[]> {
      return db.select().from(envVars).where(eq(envVars.serviceId, serviceId)).orderBy(asc(envVars.key));
    },
    async get(serviceId: string, key: string): Promise<EnvVarRow | undefined> {
      const [row] = await db.select().from(envVars).where(and(eq(envVars.serviceId, serviceId), eq(envVars.key, key))).limit(1);
      return row;
    },
    async put(serviceId: string, key: string, sealedValue: string): Promise<void> {
      await db
        .insert(envVars)
        .values({ serviceId, key, sealedValue })
        .onConflictDoUpdate({ target: [envVars.serviceId, envVars.key], set: { sealedValue, updatedAt: new Date() } });
    },
    /** Replaces the whole set (call inside a transaction). */
    async replace(serviceId: string, rows: Array<{ key: string; sealedValue: string }>): Promise<void> {
      await db.delete(envVars).where(eq(envVars.serviceId, serviceId));
      if (rows.length) await db.insert(envVars).values(rows.map((r) => ({ serviceId, ...r })));
    },
    async delete(serviceId: string, key: string): Promise<boolean> {
      return (await db.delete(envVars).where(and(eq(envVars.serviceId, serviceId), eq(envVars.key, key))).returning({ key: envVars.key })).length > 0;
    },
  };
}
export type EnvVarRepo = ReturnType<typeof createEnvVarRepo>;
