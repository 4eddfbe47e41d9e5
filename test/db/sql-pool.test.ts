// The SqlPool's statements with session settings: each connection is given them once and keeps
// them, a connection whose statement failed is replaced (and the new one given them again), and
// only plain names and values are written into the SET.
import pino from 'pino';
import { afterAll, expect, inject, it } from 'vitest';
import { createSqlPool } from '../../db/sql-pool.js';

// One connection: every statement below runs on the same session, until one fails.
const sql = createSqlPool(inject('pgAdminUrl'), 1, pino({ level: 'silent' }));
afterAll(() => sql.end());

const showWorkMem = 'select current_setting(\'work_mem\') as work_mem, pg_backend_pid() as pid';
type Row = { work_mem: string; pid: number };

it('a statement runs with its settings; the session keeps them; other settings are set again', async () => {
  const [plain] = await sql.query<Row>(showWorkMem);
  expect(plain.work_mem).not.toBe('7MB');
  const [first] = await sql.queryWithSettings<Row>({ work_mem: '7MB' }, showWorkMem, [], 'show_work_mem');
  expect(first).toEqual({ work_mem: '7MB', pid: plain.pid });
  // Kept by the connection (for settings no other statement depends on).
  expect((await sql.query<Row>(showWorkMem))[0].work_mem).toBe('7MB');
  const [second] = await sql.queryWithSettings<Row>({ work_mem: '9MB' }, showWorkMem, [], 'show_work_mem');
  expect(second).toEqual({ work_mem: '9MB', pid: plain.pid });
});

it('a connection whose statement failed is closed; the next one is given the settings again', async () => {
  const [before] = await sql.queryWithSettings<Row>({ work_mem: '5MB' }, showWorkMem);
  await expect(sql.queryWithSettings({ work_mem: '5MB' }, 'select 1/0')).rejects.toThrow(/division by zero/);
  const [after] = await sql.queryWithSettings<Row>({ work_mem: '5MB' }, showWorkMem);
  expect(after.pid).not.toBe(before.pid);
  expect(after.work_mem).toBe('5MB');
});

it('refuses a setting name or value that is not a plain word, before any statement', async () => {
  await expect(sql.queryWithSettings({ "work_mem = '1MB'; drop table x; --": 1 }, 'select 1')).rejects.toThrow(/not a setting name or value/);
  await expect(sql.queryWithSettings({ work_mem: "1MB'; select 1; --" }, 'select 1')).rejects.toThrow(/not a setting name or value/);
  // The pool's only connection is still usable.
  expect(await sql.query<{ one: number }>('select 1 as one')).toEqual([{ one: 1 }]);
});
