import { pino } from 'pino';
import type { Config } from '../config.js';
import type { Cleanup } from '../cleanup.js';
import { loadCatalog } from '../../core/billing/catalog.js';
import type { LogOptions } from '../../http/app.js';
import { startQueue } from '../../jobs/queue.js';
import { createSecretBox, loadSecretKey } from '../../lib/secret-box.js';
import { openStore } from '../../store/db.js';
import { createRepos, inTransaction } from '../../store/repos/index.js';
import { createLocalRuntime } from '../../runtime/local/index.js';
import { createSwarmCluster } from '../../runtime/swarm/index.js';

/**
 * What every other step stands on: the secret box, the price catalog, the system log, the store and its job queue,
 * and the runtime. `onQueueError` reaches the API's log once it exists.
 */
export async function openFoundation(
  config: Config,
  options: LogOptions,
  cleanup: Cleanup,
  onQueueError: (err: Error) => void,
) {
  const box = createSecretBox(loadSecretKey(config.secretKey, config.dataDir));
  // A bad price catalog stops the start with what is wrong in it, before anything else is opened.
  const catalog = loadCatalog(config.priceCatalogPath);
  // The runtime and the deploy engine log as the system, outside any request.
  const log =
    options.log === false
      ? pino({ enabled: false })
      : pino(
          { level: options.log?.level ?? config.logLevel, base: { component: 'system' } },
          options.log?.stream ?? process.stdout,
        );
  // The runtime's probes (bwrap, cgroups, a network namespace) mostly wait on child processes: they run while
  // the store opens. A failed start still waits for them, so none is left half-done.
  const runtimeReady = createLocalRuntime({
    dataDir: config.dataDir,
    network: config.network,
    networkCidr: config.networkCidr,
    egressAllow: config.egressAllow,
    containers: config.containers,
    insecureRegistries: config.insecureRegistries,
    containerDiskMb: config.containerDiskMb,
    limits: { pids: config.pidsLimit, diskMb: config.diskLimitMb },
    sandbox: config.sandbox,
    corepack: { registry: config.npmRegistry, integrityKeys: config.corepackIntegrityKeys },
    nodeCacheDir: config.nodeCacheDir,
    nodeReleasesMax: config.nodeReleasesMax,
    log,
  });
  const probed = runtimeReady.then(
    () => undefined,
    () => undefined,
  );
  cleanup.push(() => probed);
  const store = await openStore(config);
  cleanup.push(() => store.close());
  const repos = createRepos(store.db);
  const transact = <T>(work: Parameters<typeof inTransaction<T>>[1]) => inTransaction(store.db, work);
  const queue = await startQueue(store.executeSql, onQueueError);
  cleanup.push(() => queue.stop());
  const runtime = await runtimeReady;
  cleanup.push(() => runtime.close?.());
  const swarm = config.swarm && createSwarmCluster(config.swarm);
  if (swarm) cleanup.push(() => swarm.close());
  return { config, box, catalog, log, store, repos, transact, queue, runtime, swarm };
}
export type Foundation = Awaited<ReturnType<typeof openFoundation>>;
