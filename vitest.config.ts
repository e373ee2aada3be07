import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // Each file boots its own servers; two cores, so keep parallelism modest.
    maxWorkers: 2,
    minWorkers: 1,
  },
});
