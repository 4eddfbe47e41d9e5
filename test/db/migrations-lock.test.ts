// Several processes starting together on a database that still needs its migrations (API replicas
// and workers after an upgrade) must not race: each applies them under an advisory lock.
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterAll, expect, inject, it } from 'vitest';
import { applyMigrations, ensureDatabase, openOrm, type Orm } from '../../db/orm.js';

const adminUrl = inject('pgAdminUrl');
const database = `liya_m_${randomBytes(6).toString('hex')}`;
const orms: Orm[] = [];

function withDatabase(url: string, name: string) {
  const u = new URL(url);
  u.pathname = `/${name}`;
  return u.toString();
}

afterAll(async () => {
  await Promise.all(orms.map((orm) => orm.close(true)));
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  await client.query(`drop database if exists ${database} with (force)`);
  await client.end();
});

it('three processes migrating an empty database at once: one applies every migration, the others find none pending', async () => {
  await ensureDatabase(adminUrl, database);
  const url = withDatabase(adminUrl, database);
  for (let i = 0; i < 3; i++) orms.push(await openOrm({ url, poolMax: 2, quiet: true }));

  const results = await Promise.allSettled(orms.map((orm) => applyMigrations(orm)));
  expect(results.map((r) => r.status)).toEqual(['fulfilled', 'fulfilled', 'fulfilled']);
  const applied = results.map((r) => (r as PromiseFulfilledResult<string[]>).value);
  const counts = applied.map((names) => names.length).sort((a, b) => a - b);
  expect(counts[0]).toBe(0);
  expect(counts[1]).toBe(0);
  expect(counts[2]).toBeGreaterThan(0);

  const client = new pg.Client({ connectionString: url });
  await client.connect();
  const { rows } = await client.query<{ n: number }>('select count(*)::int as n from mikro_orm_migrations');
  await client.end();
  expect(rows[0].n).toBe(counts[2]);
});
