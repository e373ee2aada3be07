import { and, asc, eq, gt } from 'drizzle-orm';
import type { PgColumn } from 'drizzle-orm/pg-core';
import type { Db } from '../db.js';
import { envGroupSecretFiles, secretFiles } from '../schema/index.js';

export interface SealedFile {
  name: string;
  /** The content sealed with the secret box (AES-256-GCM). */
  sealedContent: string;
}

/**
 * Sealed secret files owned by one row of another table: a service's own (secret_files) or an env group's
 * (env_group_secret_files). Both tables have the same shape; only the owner column's name differs.
 */
function createSealedFileRepo(
  db: Db,
  table: typeof secretFiles | typeof envGroupSecretFiles,
  ownerColumn: 'serviceId' | 'groupId',
) {
  const t = table as typeof secretFiles;
  const owner = (table as unknown as Record<string, PgColumn>)[ownerColumn]!;
  const row = (ownerId: string, f: SealedFile) =>
    ({
      [ownerColumn]: ownerId,
      name: f.name,
      sealedContent: f.sealedContent,
    }) as unknown as typeof secretFiles.$inferInsert;
  const columns = { name: t.name, sealedContent: t.sealedContent };
  return {
    /** By name; `after` and `limit` page through them (Render's cursor). */
    list(ownerId: string, page: { after?: string; limit?: number } = {}): Promise<SealedFile[]> {
      const query = db
        .select(columns)
        .from(t)
        .where(and(eq(owner, ownerId), page.after === undefined ? undefined : gt(t.name, page.after)))
        .orderBy(asc(t.name));
      return page.limit === undefined ? query : query.limit(page.limit);
    },
    async get(ownerId: string, name: string): Promise<SealedFile | undefined> {
      const [found] = await db
        .select(columns)
        .from(t)
        .where(and(eq(owner, ownerId), eq(t.name, name)))
        .limit(1);
      return found;
    },
    async put(ownerId: string, f: SealedFile): Promise<void> {
      await db
        .insert(t)
        .values(row(ownerId, f))
        .onConflictDoUpdate({
          target: [owner, t.name],
          set: { sealedContent: f.sealedContent, updatedAt: new Date() },
        });
    },
    /** Replaces the whole set (call inside a transaction). */
    async replace(ownerId: string, files: SealedFile[]): Promise<void> {
      await db.delete(t).where(eq(owner, ownerId));
      if (files.length) await db.insert(t).values(files.map((f) => row(ownerId, f)));
    },
    async delete(ownerId: string, name: string): Promise<boolean> {
      const gone = await db
        .delete(t)
        .where(and(eq(owner, ownerId), eq(t.name, name)))
        .returning({ name: t.name });
      return gone.length > 0;
    },
  };
}
export type SecretFileRepo = ReturnType<typeof createSealedFileRepo>;

export const createSecretFileRepo = (db: Db) => createSealedFileRepo(db, secretFiles, 'serviceId');
export const createEnvGroupSecretFileRepo = (db: Db) => createSealedFileRepo(db, envGroupSecretFiles, 'groupId');
