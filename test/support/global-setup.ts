// Once per test run: a build of the current sources for the `liya` subprocesses, one PostgreSQL
// (embedded in a temp folder, or TEST_DATABASE_URL) and a template database with every migration
// applied; each test file clones the template.
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import pino from 'pino';
import type { TestProject } from 'vitest/node';
import { startEmbeddedPostgres, type EmbeddedPostgres } from '../../db/embedded.js';
import { applyMigrations, ensureDatabase, openOrm } from '../../db/orm.js';
import { loadConfig } from '../../server/config.js';
import { migrateJobSchema } from '../../worker/runner.js';
import type { AppDeps } from '../../server/deps.js';
import { ensureTestBuild } from '../../scripts/build.mjs';
import { freePort } from './free-port.js';

export const TEMPLATE_DB = 'liya_test_template';

function withDatabase(url: string, database: string) {
  const u = new URL(url);
  u.pathname = `/${database}`;
  return u.toString();
}

export default async function setup(project: TestProject) {
  // The CLI tests run bin/liya.mjs, which runs compiled JavaScript: build the sources as they are
  // now (a clean clone has no dist/, and a dist/ may be older than the sources). Set before the
  // test workers start, so every subprocess they spawn inherits it.
  const liyaDist = ensureTestBuild();
  process.env.LIYA_DIST = liyaDist;
  project.provide('liyaDist', liyaDist);

  let embedded: EmbeddedPostgres | null = null;
  let dir: string | null = null;
  let adminUrl = process.env.TEST_DATABASE_URL;
  if (!adminUrl) {
    dir = await mkdtemp(path.join(os.tmpdir(), 'liya-test-'));
    embedded = await startEmbeddedPostgres({ dataDir: path.join(dir, 'pg'), port: await freePort() });
    adminUrl = embedded.url('postgres');
  }
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  await admin.query(`drop database if exists ${TEMPLATE_DB}`);
  await admin.end();
  await ensureDatabase(adminUrl, TEMPLATE_DB);
  const templateUrl = withDatabase(adminUrl, TEMPLATE_DB);
  const orm = await openOrm({ url: templateUrl, quiet: true });
  await applyMigrations(orm);
  await orm.close(true);
  const pool = new pg.Pool({ connectionString: templateUrl });
  pool.on('error', () => undefined);
  pool.on('connect', (client) => client.on('error', () => undefined));
  await migrateJobSchema(pool, { log: pino({ level: 'silent' }), config: loadConfig({}) } as unknown as AppDeps);
  await pool.end();

  project.provide('pgAdminUrl', adminUrl);
  project.provide('pgTemplate', TEMPLATE_DB);

  return async () => {
    await embedded?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  };
}

declare module 'vitest' {
  export interface ProvidedContext {
    pgAdminUrl: string;
    pgTemplate: string;
    /** The compiled sources that bin/liya.mjs runs in tests (LIYA_DIST). */
    liyaDist: string;
  }
}
