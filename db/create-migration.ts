// Generates a migration from the difference between the entities and a fresh database built from
// the existing migrations. Usage: npm run migration:create [-- name]
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { startEmbeddedPostgres } from './embedded.js';
import { applyMigrations, ensureDatabase, openOrm } from './orm.js';

const dir = await mkdtemp(path.join(os.tmpdir(), 'liya-migration-'));
const pgServer = await startEmbeddedPostgres({ dataDir: path.join(dir, 'pg'), port: 54000 + Math.floor(Math.random() * 900) });
try {
  await ensureDatabase(pgServer.url(), 'liya');
  const orm = await openOrm({ url: pgServer.url('liya') });
  await applyMigrations(orm);
  const result = await orm.migrator.create(undefined, false, false, process.argv[2]);
  console.log(result.fileName ? `created ${result.fileName}` : 'no changes');
  await orm.close(true);
} finally {
  await pgServer.stop();
  await rm(dir, { recursive: true, force: true });
}
