// Apart from db/orm.ts so that the server can create its database while the ORM's modules load.
import pg from 'pg';

/** Creates `database` on the server behind `adminUrl` unless it exists. */
export async function ensureDatabase(adminUrl: string, database: string): Promise<void> {
  const client = new pg.Client({ connectionString: adminUrl });
  client.on('error', () => undefined);
  await client.connect();
  try {
    const found = await client.query('select 1 from pg_database where datname = $1', [database]);
    if (found.rowCount === 0) await client.query(`create database ${client.escapeIdentifier(database)}`);
  } finally {
    await client.end();
  }
}
