// `npm run bench`: one embedded PostgreSQL in a temp folder, then every benchmark in turn.
// Settings (optional): BENCH_CONNECTIONS (32), BENCH_WARMUP_SECONDS (3), BENCH_DURATION_SECONDS (15),
// BENCH_POOL_MAX (10). Exit code 0 whatever the figures; non-zero only when the benchmark broke.
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { startEmbeddedPostgres } from '../../db/embedded.js';
import { runCollectionsListBench } from './collections-list.bench.js';
import { Cleanup, freePort } from './lib.js';

function intSetting(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < 1) throw new Error(`${name} must be a positive integer (got ${raw})`);
  return value;
}

const cleanup = new Cleanup();

async function main() {
  const settings = {
    connections: intSetting('BENCH_CONNECTIONS', 32),
    warmupSeconds: intSetting('BENCH_WARMUP_SECONDS', 3),
    durationSeconds: intSetting('BENCH_DURATION_SECONDS', 15),
    poolMax: intSetting('BENCH_POOL_MAX', 10),
  };

  const dir = await mkdtemp(path.join(os.tmpdir(), 'liya-bench-'));
  cleanup.add('temp folder', () => rm(dir, { recursive: true, force: true }));
  console.log('starting an embedded PostgreSQL ...');
  const embedded = await startEmbeddedPostgres({ dataDir: path.join(dir, 'pg'), port: await freePort() });
  cleanup.add('embedded postgres', () => embedded.stop());

  await runCollectionsListBench(embedded.url('postgres'), cleanup, settings);
}

let interrupted = false;
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.on(signal, () => {
    if (interrupted) return;
    interrupted = true;
    console.error(`\n${signal}: shutting down ...`);
    void cleanup.run().finally(() => process.exit(130));
  });
}

let exitCode = 0;
try {
  await main();
} catch (err) {
  console.error('benchmark failed:', err);
  exitCode = 1;
} finally {
  await cleanup.run();
}
process.exit(exitCode);
