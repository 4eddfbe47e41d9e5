// The work behind `liya migrate` (loaded only when that command runs: it pulls in the ORM).
import pg from 'pg';
import pino from 'pino';
import { applyMigrations, openOrm } from '../../db/orm.js';
import type { AppDeps } from '../../server/deps.js';
import { migrateJobSchema } from '../../worker/runner.js';
import { loadServerConfig } from './config.js';
import { openCliDatabase } from './database.js';

export interface MigrationReport {
  /** Where, without credentials. */
  database: string;
  migrations: { applied: string[]; total: number };
  /** graphile-worker schema version before and after (null: no schema). */
  jobSchema: { from: number | null; to: number | null };
}

async function jobSchemaVersion(pool: pg.Pool): Promise<number | null> {
  try {
    const { rows } = await pool.query<{ id: number | null }>('select max(id) as id from graphile_worker.migrations');
    return rows[0]?.id ?? null;
  } catch {
    return null; // no schema yet
  }
}

export async function runMigrations(): Promise<MigrationReport> {
  const config = loadServerConfig();
  // Warnings only, on stderr: stdout is the report.
  const log = pino({ level: 'warn' }, pino.destination({ fd: 2, sync: true }));
  const db = await openCliDatabase(config, log);
  const cleanups: (() => Promise<unknown>)[] = [];
  if (db.embedded) cleanups.push(() => db.embedded!.stop());
  try {
    const orm = await openOrm({ url: db.url, poolMax: 2, quiet: true });
    cleanups.push(() => orm.close(true));
    const applied = await applyMigrations(orm);
    const executed = await orm.migrator.getExecuted();
    const pool = new pg.Pool({ connectionString: db.url, max: 2 });
    pool.on('error', () => undefined);
    pool.on('connect', (client) => client.on('error', () => undefined));
    cleanups.push(() => pool.end());
    const from = await jobSchemaVersion(pool);
    // Only the logger is used by the job schema migration.
    await migrateJobSchema(pool, { config, log } as Pick<AppDeps, 'config' | 'log'> as AppDeps);
    const to = await jobSchemaVersion(pool);
    return { database: db.description, migrations: { applied, total: executed.length }, jobSchema: { from, to } };
  } finally {
    for (const cleanup of cleanups.reverse()) await cleanup().catch(() => undefined);
  }
}
