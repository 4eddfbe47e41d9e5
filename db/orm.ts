import { readdir } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Migrator } from '@mikro-orm/migrations';
import { MikroORM, type EntityManager } from '@mikro-orm/postgresql';
import pg from 'pg';
import { entities } from './entities/index.js';

export type { EntityManager };
export type Orm = MikroORM;

const migrationsDir = path.join(path.dirname(fileURLToPath(import.meta.url)), 'migrations');

export interface OrmOptions {
  url: string;
  /** Connection pool size (default 10). */
  poolMax?: number;
  /** Log SQL (default false). */
  debug?: boolean;
  /** Silence the migrator's progress lines (default false). */
  quiet?: boolean;
}

export function createOrmConfig(options: OrmOptions) {
  return {
    clientUrl: options.url,
    entities,
    extensions: [Migrator],
    pool: { min: 0, max: options.poolMax ?? 10 },
    debug: options.debug ?? false,
    ...(options.quiet ? { logger: () => undefined } : {}),
    // Every unit of work forks its own EntityManager; the global one must never be used.
    allowGlobalContext: false,
    ensureDatabase: false,
    preferTs: true,
    // Partitioned by month in hand-written migrations, their partitions made by the maintenance job:
    // a generated migration must neither diff them nor drop what it does not model.
    schemaGenerator: { skipTables: ['usage_events', 'session_messages'] },
    migrations: {
      path: migrationsDir,
      pathTs: migrationsDir,
      glob: '!(*.d).{js,ts}',
      emit: 'ts' as const,
      snapshot: false,
      transactional: true,
      allOrNothing: true,
    },
  };
}

export async function openOrm(options: OrmOptions): Promise<MikroORM> {
  return MikroORM.init(createOrmConfig(options));
}

// Any fixed number: the key of the session-level advisory lock that serialises migrations.
const MIGRATION_LOCK_KEY = 7_311_402_119;

/**
 * Whether the folder holds a migration the database has not recorded (its table missing counts as
 * one). One query: on a current schema the migrator, which loads every migration module and
 * asks the database several times, is not needed at all.
 */
async function anyMigrationPending(client: pg.Client, tableName: string): Promise<boolean> {
  // The migrator's own rule for what a migration file is (createOrmConfig's glob) and its name.
  const files = (await readdir(migrationsDir)).filter((file) => /\.[jt]s$/.test(file) && !file.endsWith('.d.ts'));
  let recorded: Set<string>;
  try {
    // Raw(catalog): the migrator's own bookkeeping table (no entity maps it), named by its config.
    const { rows } = await client.query<{ name: string }>(`select name from ${client.escapeIdentifier(tableName)}`);
    recorded = new Set(rows.map((row) => row.name.replace(/\.[jt]s$/, '')));
  } catch {
    return true; // no table yet (a new database): the migrator creates it
  }
  return files.some((file) => !recorded.has(file.replace(/\.[jt]s$/, '')));
}

/**
 * Applies pending migrations; returns the names applied. Several processes may start together on
 * one database (API replicas, workers): the migrator itself takes no lock, so each run holds a
 * PostgreSQL advisory lock on its own connection, and the ones that waited find nothing pending.
 */
export async function applyMigrations(orm: MikroORM): Promise<string[]> {
  const lock = new pg.Client({ connectionString: orm.config.get('clientUrl') });
  // A connection dropped while the lock is held fails the migration's own queries; without a
  // listener its 'error' event would end the process instead.
  lock.on('error', () => undefined);
  await lock.connect();
  try {
    // Most starts find the schema current: that needs no lock (a migration being applied
    // meanwhile by another process is not recorded yet, so this one waits for the lock below).
    if (!(await anyMigrationPending(lock, orm.config.get('migrations').tableName ?? 'mikro_orm_migrations'))) return [];
    // Raw(advisory-lock): a session lock on the migration connection, held until it ends.
    await lock.query('select pg_advisory_lock($1)', [MIGRATION_LOCK_KEY]);
    const applied = await orm.migrator.up();
    return applied.map((m) => m.name);
  } finally {
    // Ending the session releases the lock, whatever happened to the migration.
    await lock.end().catch(() => undefined);
  }
}

export { ensureDatabase } from './ensure-database.js';
