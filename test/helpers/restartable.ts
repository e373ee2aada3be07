import { afterAll } from 'vitest';
import { client } from './client.js';
import { freshStore, spawnSlipway, type SlipwayProcess } from './process.js';

/**
 * Slipway as child processes on one fresh store (for kill -9 tests): `start()` starts one (again, after a kill) with
 * `env`; every process and the store go after the test file.
 */
export function useRestartableSlipway(env: Record<string, string>) {
  let store: Awaited<ReturnType<typeof freshStore>> | undefined;
  const running: SlipwayProcess[] = [];
  afterAll(async () => {
    for (const proc of running) await proc.kill();
    await store?.remove();
  });
  return {
    async start() {
      store ??= await freshStore();
      const proc = spawnSlipway({ ...store.env, SLIPWAY_PORT: '0', SLIPWAY_ROUTER_PORT: '0', ...env });
      running.push(proc);
      const up = await proc.waitForOutput(/"msg":"slipway is up"/, 30_000);
      return { proc, api: client(/"url":"([^"]+)"/.exec(up)![1]!) };
    },
  };
}
