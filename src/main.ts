import { loadConfig } from './config.js';
import { chooseDataDir } from './runtime/local/data-dir.js';
import { startSlipway } from './server.js';

const loaded = loadConfig();
// Without bubblewrap, a default data dir the apps cannot reach moves to /var/lib/slipway (src/runtime/local/data-dir.ts).
const chosen = chooseDataDir(loaded, { explicit: !!process.env.SLIPWAY_DATA_DIR });
const config = { ...loaded, dataDir: chosen.dataDir };
if (chosen.reason) console.warn(`slipway: ${chosen.reason}`);
const slipway = await startSlipway(config).catch((err: Error) => {
  console.error(`slipway: could not start: ${err.message}`);
  process.exit(1);
});
slipway.app.log.info({ url: slipway.url, store: slipway.store.kind, dataDir: config.dataDir }, 'slipway is up');

let stopping = false;
for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  process.on(signal, () => {
    if (stopping) return;
    stopping = true;
    slipway.app.log.info({ signal }, 'shutting down: finishing in-flight requests');
    slipway.close().then(
      () => process.exit(0),
      (err: Error) => {
        slipway.app.log.error({ err }, 'unclean shutdown');
        process.exit(1);
      },
    );
  });
}
