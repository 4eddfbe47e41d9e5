// Most starts find the schema current: that answer must come from one query, without waiting for
// the migration lock, and a migration the database has not recorded must still be applied.
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, expect, inject, it } from 'vitest';
import { applyMigrations, ensureDatabase, openOrm, type Orm } from '../../db/orm.js';

const adminUrl = inject('pgAdminUrl');
const database = `liya_mc_${randomBytes(6).toString('hex')}`;
// db/orm.ts's MIGRATION_LOCK_KEY: the advisory lock a migrating process holds.
const MIGRATION_LOCK_KEY = 7_311_402_119;
let url: string;
let orm: Orm;

function withDatabase(base: string, name: string) {
  const u = new URL(base);
  u.pathname = `/${name}`;
  return u.toString();
}

beforeAll(async () => {
  await ensureDatabase(adminUrl, database);
  url = withDatabase(adminUrl, database);
  orm = await openOrm({ url, poolMax: 2, quiet: true });
  expect((await applyMigrations(orm)).length).toBeGreaterThan(0);
});

afterAll(async () => {
  await orm?.close(true);
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  await client.query(`drop database if exists ${database} with (force)`);
  await client.end();
});

it('a current schema: nothing applied, without taking the migration lock (another process holds it)', async () => {
  const holder = new pg.Client({ connectionString: url });
  await holder.connect();
  try {
    await holder.query('select pg_advisory_lock($1)', [MIGRATION_LOCK_KEY]);
    // Waiting for the lock would never end while `holder` keeps it (the test's time limit would fail it).
    expect(await applyMigrations(orm)).toEqual([]);
  } finally {
    await holder.end();
  }
});

it('a migration the database has not recorded is applied', async () => {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query<{ name: string }>('select name from mikro_orm_migrations order by id desc limit 1');
    const last = rows[0].name;
    // Reverted by the migrator, which runs its down() and removes its record.
    await orm.migrator.down();
    expect((await client.query('select 1 from mikro_orm_migrations where name = $1', [last])).rowCount).toBe(0);
    expect(await applyMigrations(orm)).toEqual([last]);
    expect((await client.query('select 1 from mikro_orm_migrations where name = $1', [last])).rowCount).toBe(1);
  } finally {
    await client.end();
  }
});
