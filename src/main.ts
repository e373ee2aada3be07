import { loadConfig } from './app/config.js';
import { chooseDataDir } from './runtime/local/data-dir.js';
import { startSlipway } from './app/start.js';
import { formatStartupSummary, upFields } from './app/startup-summary.js';

const loaded = loadConfig();
// Without bubblewrap, a default data dir the apps cannot reach moves to /var/lib/slipway (src/runtime/local/data-dir.ts).
const chosen = chooseDataDir(loaded, { explicit: !!process.env.SLIPWAY_DATA_DIR });
const config = { ...loaded, dataDir: chosen.dataDir };
if (chosen.reason) console.warn(`slipway: ${chosen.reason}`);
// In a terminal, a person reads the start: a summary instead of the start-up's JSON lines. Piped or redirected, JSON.
const summary = process.stdout.isTTY === true;
const slipway = await startSlipway(config, { startupSummary: summary }).catch((err: Error) => {
  console.error(`slipway: could not start: ${err.message}`);
  process.exit(1);
});
const facts = slipway.startupFacts();
if (summary) process.stdout.write(formatStartupSummary(facts, Math.min(process.stdout.columns || 100, 100)));
else slipway.app.log.info(upFields(facts), 'slipway is up');

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
