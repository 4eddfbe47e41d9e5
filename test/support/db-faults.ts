// Real database failures for tests: a trigger that makes PostgreSQL refuse chosen writes, the way a
// full disk or a broken constraint would, so the code's error paths run against the real thing.

type Sql = (text: string) => Promise<unknown>;

/**
 * Makes PostgreSQL raise an error on every `event` of `table` whose row matches `when` (SQL over
 * `new`/`old`), until the returned function is called.
 */
export async function refuseWrites(sql: Sql, name: string, table: string, event: 'insert' | 'update' | 'delete', when: string): Promise<() => Promise<void>> {
  await sql(`
    create or replace function ${name}() returns trigger language plpgsql as $$
    begin raise exception '${name}: refused for this test'; end $$;
    create trigger ${name} before ${event} on ${table} for each row when (${when}) execute function ${name}();
  `);
  return async () => {
    await sql(`drop trigger if exists ${name} on ${table}`);
  };
}
