// Apart from db/orm.ts so that the server can create its database while the ORM's modules load.
import pg from 'pg';

/** Creates `database` on the server behind `adminUrl` unless it exists. */
export async function ensureDatabase(adminUrl: string, database: string): Promise<void> {
  const client = new pg.Client({ connectionString: adminUrl });
  client.on('error', () => undefined);
  await client.connect();
  try {
    // Raw(catalog): pg_database, the server's list of databases (no entity, no ORM yet).
    const found = await client.query('select 1 from pg_database where datname = $1', [database]);
    if (found.rowCount !== 0) return;
    // Raw(catalog): DDL; the name is quoted as an identifier.
    await client.query(`create database ${client.escapeIdentifier(database)}`);
  } finally {
    await client.end();
  }
}
