/**
 * Bulk rows for bench/api.ts's list routes: audit entries spread over the workspaces, services
 * in one workspace and deploys of one service. Written straight into the store while Slipway is
 * stopped (PGlite has one writer), with ids from src/lib/ids.ts so they sort by time as real ones do.
 */
import { eq } from 'drizzle-orm';
import { loadConfig } from '../src/app/config.js';
import { newId } from '../src/lib/ids.js';
import { openStore } from '../src/store/db.js';
import { auditLogs, deploys, services } from '../src/store/schema/index.js';

export interface ListSeed {
  auditEntries: number;
  /** Workspaces the audit entries are spread over. */
  workspaceIds: string[];
  /** A service created through the API: copied `services - 1` times in its workspace. */
  serviceId: string;
  services: number;
  /** Deploys of `serviceId`. */
  deploys: number;
}

const BATCH = 1000;

async function inBatches<T>(count: number, make: (i: number) => T, insert: (rows: T[]) => Promise<unknown>) {
  for (let start = 0; start < count; start += BATCH) {
    const rows: T[] = [];
    for (let i = start; i < Math.min(count, start + BATCH); i++) rows.push(make(i));
    await insert(rows);
  }
}

export async function seedLists(env: Record<string, string>, seed: ListSeed): Promise<void> {
  const store = await openStore(loadConfig({ ...process.env, ...env }));
  try {
    const { db } = store;
    // A second apart, ending a day ago: older than everything the API wrote.
    const at = (i: number, count: number) => Date.now() - 86_400_000 - (count - i) * 1000;
    await inBatches(
      seed.auditEntries,
      (i) => {
        const t = at(i, seed.auditEntries);
        return {
          id: newId('audit', t),
          workspaceId: seed.workspaceIds[i % seed.workspaceIds.length]!,
          createdAt: new Date(t),
          event: 'service.updated',
          status: 'success' as const,
          actorType: 'rest_api' as const,
          actorId: 'usr-bench',
          actorEmail: 'bench@example.com',
          metadata: JSON.stringify({ action: 'PATCH /v1/services/:serviceId', method: 'PATCH', statusCode: '200' }),
        };
      },
      (rows) => db.insert(auditLogs).values(rows),
    );
    const [template] = await db.select().from(services).where(eq(services.id, seed.serviceId));
    if (!template) throw new Error(`service ${seed.serviceId} not found`);
    await inBatches(
      seed.services - 1,
      (i) => {
        const t = at(i, seed.services);
        return {
          ...template,
          id: newId('service', t),
          name: `${template.name}-${i}`,
          slug: `${template.slug}-${i}`,
          createdAt: new Date(t),
          updatedAt: new Date(t),
        };
      },
      (rows) => db.insert(services).values(rows),
    );
    await inBatches(
      seed.deploys,
      (i) => {
        const t = at(i, seed.deploys);
        return {
          id: newId('deploy', t),
          serviceId: seed.serviceId,
          status: 'deactivated' as const,
          trigger: 'api' as const,
          commitMessage: `bench deploy ${i}`,
          createdAt: new Date(t),
          updatedAt: new Date(t),
          startedAt: new Date(t),
          finishedAt: new Date(t + 500),
        };
      },
      (rows) => db.insert(deploys).values(rows),
    );
    // Postgres' autovacuum would have analyzed tables grown this much by now; PGlite has none, Slipway does it.
    if (store.kind === 'postgres') await store.executeSql('analyze');
  } finally {
    await store.close();
  }
}
