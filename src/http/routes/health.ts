import { Type } from '@sinclair/typebox';
import { machineStatus } from '../../core/machine-status.js';
import type { HttpDeps } from '../deps.js';
import { defineRoute } from '../route.js';
import { Timestamp } from '../schemas/common.js';

const Component = Type.Object({
  status: Type.Union([Type.Literal('ok'), Type.Literal('unavailable')]),
  latencyMs: Type.Number(),
  error: Type.Optional(Type.String()),
});

/** How apps are kept apart on this machine; `notes` says what it cannot enforce (docs/architecture.md, "Tenant isolation on one machine"). */
const Isolation = Type.Object({
  network: Type.Union([Type.Literal('namespaces'), Type.Literal('shared')], {
    description: 'shared: fit for one team only',
  }),
  sandbox: Type.Union([Type.Literal('bwrap'), Type.Literal('none')]),
  cgroups: Type.Union([Type.Literal('v2'), Type.Literal('v1'), Type.Literal('none')]),
  limits: Type.Object({
    memory: Type.Boolean(),
    cpu: Type.Boolean(),
    pids: Type.Boolean(),
    disk: Type.Boolean(),
    seccomp: Type.Boolean(),
    buildDisk: Type.Boolean({
      description: "Builds write to a size-capped disk of their own (SLIPWAY_BUILD_DISK_MB), not the host's",
    }),
  }),
  notes: Type.Array(Type.String()),
});

/** How datastores of a kind are provisioned on this Slipway; `off` says what to install or set. */
const DatastoreMode = Type.Object({
  mode: Type.Union([Type.Literal('local'), Type.Literal('cluster'), Type.Literal('shared'), Type.Literal('off')], {
    description: 'local: a server per datastore on this machine; cluster/shared: an existing server; off: none',
  }),
  versions: Type.Optional(Type.Array(Type.String())),
  note: Type.Optional(Type.String()),
});

const SwarmNode = Type.Object({
  id: Type.String(),
  hostname: Type.String(),
  role: Type.Union([Type.Literal('manager'), Type.Literal('worker')]),
  state: Type.String({ description: "Swarm's: ready, down, unknown, disconnected" }),
  availability: Type.String({ description: 'active, pause or drain: whether Swarm places new tasks there' }),
  leader: Type.Boolean(),
  labels: Type.Record(Type.String(), Type.String()),
  cpus: Type.Number(),
  memoryMb: Type.Integer(),
  freeCpus: Type.Number({ description: 'What running tasks have not reserved' }),
  freeMemoryMb: Type.Integer(),
});

/** The swarm's nodes (SLIPWAY_SWARM_DOCKER_HOST; docs/swarm.md), or why its manager did not answer. */
const Swarm = Type.Union([Type.Object({ nodes: Type.Array(SwarmNode) }), Type.Object({ error: Type.String() })]);

async function probe(check: () => Promise<void>) {
  const started = performance.now();
  try {
    await check();
    return { status: 'ok' as const, latencyMs: Math.round(performance.now() - started) };
  } catch (err) {
    return {
      status: 'unavailable' as const,
      latencyMs: Math.round(performance.now() - started),
      error: (err as Error).message,
    };
  }
}

export function healthRoutes({ health, datastores, postgresRecovery }: HttpDeps) {
  const components = async () => {
    const store = await probe(health.store);
    // The queue lives in the store: when the store is down, so is the queue.
    const queue =
      store.status === 'ok' ? await probe(health.queue) : { ...store, error: 'the state store is unavailable' };
    return { store, queue };
  };
  return [
    defineRoute({
      method: 'GET',
      url: '/api/health',
      summary: 'Health of the state store and job queue (503 when unavailable)',
      tags: ['Health'],
      access: 'public',
      schema: {
        response: {
          200: Type.Object({ status: Type.String(), storeKind: Type.String(), store: Component, queue: Component }),
          503: Type.Object({ status: Type.String(), storeKind: Type.String(), store: Component, queue: Component }),
        },
      },
      handler: async (_req, reply) => {
        const { store, queue } = await components();
        const ok = store.status === 'ok' && queue.status === 'ok';
        return reply
          .code(ok ? 200 : 503)
          .send({ status: ok ? 'ok' : 'unavailable', storeKind: health.storeKind, store, queue });
      },
    }),
    defineRoute({
      method: 'GET',
      url: '/status',
      summary: "Public status of Slipway's components",
      tags: ['Health'],
      access: 'public',
      schema: {
        response: {
          200: Type.Object({
            status: Type.Union([Type.Literal('operational'), Type.Literal('degraded')]),
            components: Type.Array(
              Type.Object({
                name: Type.String(),
                status: Type.Union([Type.Literal('operational'), Type.Literal('down')]),
              }),
            ),
            isolation: Isolation,
            containers: Type.Union([Type.Object({ engine: Type.String() }), Type.Object({ none: Type.String() })]),
            datastores: Type.Object({ postgres: DatastoreMode, keyValue: DatastoreMode }),
            backups: Type.Object(
              { archiving: Type.Integer(), failing: Type.Integer() },
              {
                description:
                  'Local Postgres datastores archiving their WAL, and how many have a failing archiver or last base backup (status is then degraded)',
              },
            ),
            router: Type.Object({
              kind: Type.Union([Type.Literal('node'), Type.Literal('nginx')]),
              lastRejected: Type.Optional(Type.Object({ at: Timestamp, reason: Type.String() })),
              /** The Node router's own process (SLIPWAY_ROUTER_PROCESS=own), which outlives the API's. */
              process: Type.Optional(
                Type.Object({ pid: Type.Integer(), adopted: Type.Boolean(), workers: Type.Integer() }),
              ),
            }),
            disk: Type.Optional(
              Type.Object(
                {
                  serviceBudgetBytes: Type.Integer(),
                  servicesBytes: Type.Integer(),
                  servicesOverBudget: Type.Integer(),
                },
                {
                  description:
                    "Services' disk use (artifacts, uploads, build disks) and each one's budget; absent while the store is down",
                },
              ),
            ),
            swarm: Type.Optional(Swarm),
            updatedAt: Timestamp,
          }),
        },
      },
      handler: async () => {
        const { store, queue } = await components();
        const list = [
          { name: 'api', status: 'operational' as const },
          { name: 'store', status: store.status === 'ok' ? ('operational' as const) : ('down' as const) },
          { name: 'queue', status: queue.status === 'ok' ? ('operational' as const) : ('down' as const) },
        ];
        const swarm = health.swarm && (await health.swarm());
        if (swarm) list.push({ name: 'swarm', status: 'error' in swarm ? 'down' : 'operational' });
        const backups = postgresRecovery.status();
        return {
          status: list.every((c) => c.status === 'operational') && backups.failing === 0 ? 'operational' : 'degraded',
          components: list,
          backups,
          ...machineStatus(health.runtime, datastores),
          router: health.router(),
          ...(store.status === 'ok' ? { disk: await health.disk().catch(() => undefined) } : {}),
          ...(swarm ? { swarm } : {}),
          updatedAt: new Date().toISOString(),
        };
      },
    }),
  ];
}
