import { loadConfig } from './config.js';
import { startSlipway } from './server.js';

const config = loadConfig();
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
