// Once per test run: a build of the current sources for the `liya` subprocesses, one PostgreSQL
// (embedded in a temp folder, or TEST_DATABASE_URL) and a template database with every migration
// applied; each test file clones the template.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
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
import { describeMismatch, OPENAPI_CHECK_DIR_ENV, slimOpenApiDocument, summarizeOpenApiChecks } from './openapi-check.js';

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
  const openApiCheckDir = await startOpenApiChecks();

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
    if (openApiCheckDir) await finishOpenApiChecks(openApiCheckDir);
  };
}

/**
 * Every response the tests' client sees is checked against the OpenAPI document
 * (openapi-check.ts): the document is written once here for the workers, which record what they
 * saw in the same folder (LIYA_OPENAPI_CHECK=0 turns it off).
 */
async function startOpenApiChecks(): Promise<string | null> {
  if (process.env.LIYA_OPENAPI_CHECK === '0') return null;
  const folder = await mkdtemp(path.join(os.tmpdir(), 'liya-openapi-check-'));
  const { getOpenApiDocument } = await import('../../server/http/openapi.js');
  await writeFile(path.join(folder, 'openapi.json'), JSON.stringify(slimOpenApiDocument(getOpenApiDocument())));
  process.env[OPENAPI_CHECK_DIR_ENV] = folder;
  return folder;
}

/** Reports what was checked; a response that did not match the document fails the run. */
async function finishOpenApiChecks(folder: string): Promise<void> {
  const summary = summarizeOpenApiChecks(folder);
  await rm(folder, { recursive: true, force: true });
  if (process.env.LIYA_OPENAPI_CHECK_REPORT) await writeFile(process.env.LIYA_OPENAPI_CHECK_REPORT, JSON.stringify(summary, null, 1));
  const { operations, responses, mismatches, checked } = summary;
  console.log(
    `OpenAPI: ${operations.seen} of ${operations.total} operations and ${responses.seen} of ${responses.total} documented responses seen, ` +
      `${checked.responses} responses checked in ${(checked.ms / 1000).toFixed(1)} s, ${mismatches.length} mismatches`,
  );
  if (!mismatches.length) return;
  // Each also failed the test that saw it (openapi-check-setup.ts); one seen outside any test fails the run here.
  throw new Error(`${mismatches.length} responses did not match the OpenAPI document:\n${mismatches.slice(0, 20).map(describeMismatch).join('\n')}`);
}

declare module 'vitest' {
  export interface ProvidedContext {
    pgAdminUrl: string;
    pgTemplate: string;
    /** The compiled sources that bin/liya.mjs runs in tests (LIYA_DIST). */
    liyaDist: string;
  }
}
