import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts', 'test/**/*.test.tsx'],
    globalSetup: ['test/support/global-setup.ts'],
    // Every response the tests' client sees is checked against the OpenAPI document.
    setupFiles: ['test/support/openapi-check-setup.ts'],
    pool: 'forks',
    maxWorkers: 2,
    // Each worker process keeps the modules it has loaded from one test file to the next: every
    // file starts its own server on its own database, so nothing a test asserts on is shared, and
    // loading the server's ~1,700 modules once per worker instead of once per file takes the suite
    // from about 11.5 to about 7.5 minutes here. What modules keep process-wide is the same for
    // every server (the worker-thread pool, the OpenAPI document, caches keyed by their input).
    isolate: false,
    // A guard against a test that hangs, not a bound on speed: beside a CPU hog (every core busy)
    // the longest tests take three times as long as on an idle machine.
    testTimeout: 120_000,
    hookTimeout: 120_000,
    fileParallelism: true,
  },
});
