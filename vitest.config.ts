import { defineConfig } from 'vitest/config';

/**
 * Files that measure the machine (a health p99 under load, a restart's time, an archive bomb refused within its budget,
 * a datastore created from the template within its): they run one at a time, after the rest, so that another file's
 * builds do not take their CPU (docs/testing.md).
 */
const SOLO = [
  'test/hardening-low.test.ts',
  'test/provisioner-postgres.test.ts',
  'test/log-flood.test.ts',
  'test/log-query-budget.test.ts',
  'test/blueprints-limits.test.ts',
  'test/recovery.test.ts',
  'test/router-workers.test.ts',
  'test/lifecycle.test.ts',
];

/** TEST_EXCLUDE: files to leave out, space-separated (the CI's Postgres pass leaves out those about the machine). */
const skipped = (process.env.TEST_EXCLUDE ?? '').split(/\s+/).filter(Boolean);

const shared = { testTimeout: 30_000, hookTimeout: 60_000, globalSetup: ['test/global-setup.ts'] };

export default defineConfig({
  test: {
    // Each file boots its own servers; two cores, so keep parallelism modest.
    maxWorkers: 2,
    minWorkers: 1,
    projects: [
      {
        // Files share a worker's loaded modules (PGlite's compiled WASM among them): each file's servers are its own.
        test: {
          ...shared,
          name: 'suite',
          include: ['test/**/*.test.ts'],
          exclude: [...SOLO, ...skipped],
          poolOptions: { forks: { isolate: false } },
        },
      },
      {
        test: {
          ...shared,
          name: 'solo',
          include: SOLO,
          exclude: skipped,
          poolOptions: { forks: { singleFork: true } },
          sequence: { groupOrder: 1 },
        },
      },
    ],
  },
});
