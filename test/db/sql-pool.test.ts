// The SqlPool's transactions: settings sent with the BEGIN hold for that transaction alone, and
// only plain names and values are written into the SET LOCAL.
import pino from 'pino';
import { afterAll, expect, inject, it } from 'vitest';
import { createSqlPool } from '../../db/sql-pool.js';

const sql = createSqlPool(inject('pgAdminUrl'), 1, pino({ level: 'silent' }));
afterAll(() => sql.end());

const workMem = async (query: typeof sql.query) => (await query<{ work_mem: string }>('show work_mem'))[0].work_mem;

it('transaction settings hold inside the transaction, and the connection keeps its own after it', async () => {
  const before = await workMem(sql.query);
  const inside = await sql.transaction((query) => workMem(query), { work_mem: '7MB', statement_timeout: 1234 });
  expect(inside).toBe('7MB');
  // One connection: the same one, after COMMIT.
  expect(await workMem(sql.query)).toBe(before);
  expect(before).not.toBe('7MB');
});

it('refuses a setting name or value that is not a plain word, before any statement', async () => {
  await expect(sql.transaction(async () => 1, { "work_mem = '1MB'; drop table x; --": 1 })).rejects.toThrow(/not a setting name or value/);
  await expect(sql.transaction(async () => 1, { work_mem: "1MB'; select 1; --" })).rejects.toThrow(/not a setting name or value/);
  // The pool's only connection is still usable.
  expect(await sql.query<{ one: number }>('select 1 as one')).toEqual([{ one: 1 }]);
});
