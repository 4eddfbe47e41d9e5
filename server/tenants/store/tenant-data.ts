// Every row of one tenant, in every table the catalog names (tenant-catalog.ts): read for an export,
// written by an import, deleted for good. The one module that reads and writes tenant rows without
// knowing their tables: each feature's store still owns its table's ordinary reads and writes.
// The statements built from catalog names stay raw (no typed query can describe them): every name
// passes ident(), and every value is a parameter. The rest are built with Kysely.
import { sql } from 'kysely';
import type { SqlPool } from '../../../db/sql-pool.js';
import { build, runBuilt } from '../../../db/statements.js';
import { AppError } from '../../errors.js';
import { ENCRYPTED_JSON_STRING, IN_FLIGHT, SECRET_COLUMNS } from '../tenant-archive.js';
import { ident, primaryKeyOrderSql, readTenantCatalog, tenantRowsSql, type TenantCatalog, type TenantTable } from './tenant-catalog.js';

type Query = SqlPool['query'];
/** A statement runner of one connection (a session of tenant-data.ts). */
export type TenantQuery = Query;

/** Rows one FETCH reads: some tens of KB of JSON for typical rows, bounded for the largest (a run's input may hold megabytes). */
const FETCH_ROWS = 100;

// The encrypted-secret shape as PostgreSQL's regular expression (the same as ENCRYPTED_JSON_STRING).
const ENCRYPTED_SQL_PATTERN = `'${ENCRYPTED_JSON_STRING.source}'`;

/**
 * `SET TIME ZONE 'UTC'` for the session (set_config): timestamps are written in UTC whatever the
 * server's zone, the same rows, the same text.
 */
const setUtcSession = (query: Query) =>
  runBuilt(query, build.selectNoFrom((eb) => eb.fn('set_config', [sql.lit('TimeZone'), sql.lit('UTC'), sql.lit(false)]).as('time_zone')));

/** The last migration this database has applied: the archive's schema version. */
async function selectSchemaVersion(query: Query): Promise<string> {
  // Raw(catalog): the migrator's own bookkeeping table, which no entity maps.
  const [row] = await query<{ name: string }>('select name from mikro_orm_migrations order by id desc limit 1');
  return row?.name ?? '';
}

/** Whether this database applied the migration `name`. */
export async function hasMigration(query: Query, name: string): Promise<boolean> {
  // Raw(catalog): the migrator's own bookkeeping table, which no entity maps.
  const [row] = await query<{ applied: boolean }>('select exists (select 1 from mikro_orm_migrations where name = $1) as applied', [name]);
  return row.applied;
}

/** The tenant's name and state; undefined when there is no such tenant. */
export async function selectTenantSummary(query: Query, tenantId: string): Promise<{ name: string; is_active: boolean } | undefined> {
  const [row] = await runBuilt(query, build.selectFrom('tenants').select(['name', 'is_active']).where('id', '=', tenantId));
  return row;
}

/** The row expression of an exported table: its JSON, with the columns that hold credentials as null. */
function exportedRowSql(table: TenantTable, alias: string): string {
  const nulls = SECRET_COLUMNS.filter((s) => s.table === table.name && s.mode === 'null' && table.columns.includes(s.column));
  const row = `to_jsonb(${alias})`;
  return nulls.length ? `(${row} || jsonb_build_object(${nulls.map((s) => `'${s.column}', null`).join(', ')}))` : row;
}

export interface SnapshotReader {
  /** The snapshot's connection, for the other tenant stores' reads (tenant-jobs.ts). */
  query: Query;
  catalog: TenantCatalog;
  schemaVersion: string;
  /** The declared secret columns that hold a value for this tenant, with how many rows do. */
  countSecrets(tables: TenantTable[], tenantId: string): Promise<{ table: string; column: string; rows: number }[]>;
  /** Reads the tenant's rows of `table` in primary key order, `FETCH_ROWS` at a time, as JSON text; answers how many. */
  readRows(table: TenantTable, tenantId: string, onBatch: (rows: string[]) => Promise<void>): Promise<number>;
}

/**
 * Runs `work` on one connection of its own (not the pool's: an export may take minutes while a
 * slow client reads it) inside a repeatable-read, read-only transaction: every table is read as of
 * one instant, and readers take no lock any writer waits for.
 */
export async function withExportSnapshot<T>(sql: SqlPool, work: (reader: SnapshotReader) => Promise<T>): Promise<T> {
  return sql.session(async (query) => {
    await setUtcSession(query);
    await query('begin isolation level repeatable read read only');
    try {
      const catalog = await readTenantCatalog(query);
      const reader: SnapshotReader = {
        query,
        catalog,
        schemaVersion: await selectSchemaVersion(query),
        countSecrets: (tables, tenantId) => countSecrets(query, catalog, tables, tenantId),
        readRows: (table, tenantId, onBatch) => readRows(query, catalog, table, tenantId, onBatch),
      };
      const result = await work(reader);
      await query('commit');
      return result;
    } catch (err) {
      await query('rollback').catch(() => undefined);
      throw err;
    }
  });
}

async function countSecrets(query: Query, catalog: TenantCatalog, tables: TenantTable[], tenantId: string) {
  const found: { table: string; column: string; rows: number }[] = [];
  for (const secret of SECRET_COLUMNS) {
    const table = tables.find((t) => t.name === secret.table);
    if (!table || !table.columns.includes(secret.column)) continue;
    const column = `t.${ident(secret.column)}`;
    const holds = secret.mode === 'json' ? `${column}::text ~ ${ENCRYPTED_SQL_PATTERN}` : `${column} is not null`;
    // Raw(catalog): a table and columns the catalog names.
    const [row] = await query<{ n: number }>(`select count(*)::int as n from ${ident(table.name)} t where ${tenantRowsSql(catalog, table, 't', '$1')} and ${holds}`, [tenantId]);
    if (row.n > 0) found.push({ table: secret.table, column: secret.column, rows: row.n });
  }
  return found;
}

async function readRows(query: Query, catalog: TenantCatalog, table: TenantTable, tenantId: string, onBatch: (rows: string[]) => Promise<void>): Promise<number> {
  // A cursor: the database sends the rows as they are fetched, so a table of any size streams in
  // bounded memory, in one scan. Raw: a table the catalog names.
  await query(
    `declare tenant_rows no scroll cursor for
       select ${exportedRowSql(table, 't')}::text as row from ${ident(table.name)} t
        where ${tenantRowsSql(catalog, table, 't', '$1')} order by ${primaryKeyOrderSql(table, 't')}`,
    [tenantId],
  );
  let total = 0;
  try {
    for (;;) {
      const rows = await query<{ row: string }>(`fetch forward ${FETCH_ROWS} from tenant_rows`);
      if (!rows.length) break;
      total += rows.length;
      await onBatch(rows.map((r) => r.row));
      if (rows.length < FETCH_ROWS) break;
    }
  } finally {
    await query('close tenant_rows');
  }
  return total;
}

export interface ImportWriter {
  catalog: TenantCatalog;
  /** Inserts rows (a JSON array of objects) into `table` when each is the tenant's; answers how many were. */
  insertRows(table: TenantTable, columns: string[], rowsJson: string, tenantId: string): Promise<number>;
  /** Deletes the tenant's rows of a derived table (the ones its trigger made during this import). */
  clearRows(table: TenantTable, tenantId: string): Promise<void>;
  query: Query;
}

/**
 * Runs `work` in one transaction on a connection of its own (an import streams for as long as its
 * upload takes): committed when `work` returns, rolled back when it throws, so a refused archive
 * leaves nothing behind.
 */
export async function withImportTransaction<T>(sql: SqlPool, work: (writer: ImportWriter) => Promise<T>): Promise<T> {
  return sql.session(async (query) => {
    await setUtcSession(query);
    await query('begin');
    try {
      const catalog = await readTenantCatalog(query);
      const result = await work({
        catalog,
        query,
        insertRows: (table, columns, rowsJson, tenantId) => insertRows(query, catalog, table, columns, rowsJson, tenantId),
        clearRows: async (table, tenantId) => {
          // Raw(catalog): a table the catalog names.
          await query(`delete from ${ident(table.name)} t where ${tenantRowsSql(catalog, table, 't', '$1')}`, [tenantId]);
        },
      });
      await query('commit');
      return result;
    } catch (err) {
      await query('rollback').catch(() => undefined);
      throw err;
    }
  });
}

async function insertRows(query: Query, catalog: TenantCatalog, table: TenantTable, columns: string[], rowsJson: string, tenantId: string): Promise<number> {
  const list = columns.map(ident).join(', ');
  // jsonb_populate_recordset reads each value with its column's own type input: timestamps,
  // numerics, arrays, bytea and text search vectors come back exactly as they were written. Rows
  // that are not the tenant's (another tenant_id, a parent of another tenant) are not inserted:
  // the count says so.
  // Raw(catalog): a table and columns the catalog names.
  const [row] = await query<{ n: number }>(
    `with inserted as (
       insert into ${ident(table.name)} (${list})
       select ${columns.map((c) => `r.${ident(c)}`).join(', ')} from jsonb_populate_recordset(null::${ident(table.name)}, $1::jsonb) r
        where ${tenantRowsSql(catalog, table, 'r', '$2')}
       returning 1)
     select count(*)::int as n from inserted`,
    [rowsJson, tenantId],
  );
  return row.n;
}

/**
 * Runs `work` on a connection of its own (no statement timeout: a deletion takes as long as the
 * tenant is big) holding the tenant's deletion lock, a session advisory lock: a second deletion of
 * the same tenant meanwhile is 409 CONFLICT instead of racing the first.
 */
export async function withTenantLock<T>(sql: SqlPool, tenantId: string, work: (query: Query) => Promise<T>): Promise<T> {
  return sql.session(async (query) => {
    // Raw(advisory-lock): a session lock, released when the connection ends.
    const [lock] = await query<{ locked: boolean }>(`select pg_try_advisory_lock(hashtext('liya-tenant-delete'), hashtext($1)) as locked`, [tenantId]);
    if (!lock.locked) throw new AppError('CONFLICT', `A deletion of tenant ${tenantId} is under way`, { retryable: true });
    // The lock ends with the session's connection.
    return work(query);
  });
}

/** Work of the tenant that a deletion would cut short, per table (IN_FLIGHT). */
export async function countInFlight(query: Query, tenantId: string): Promise<Record<string, number>> {
  const counts: Record<string, number> = {};
  for (const { table, statuses } of IN_FLIGHT) {
    const [row] = await runBuilt(
      query,
      build
        .selectFrom(table)
        .select(sql<number>`count(*)::int`.as('n'))
        .where('tenant_id', '=', tenantId)
        .where(sql<boolean>`${sql.ref('status')} = any(${[...statuses]}::text[])`),
    );
    counts[table] = row.n;
  }
  return counts;
}

/** Marks the tenant's work in flight cancelled: a process executing it stops at its next check instead of writing on. */
export async function cancelInFlight(query: Query, tenantId: string): Promise<void> {
  for (const { table, statuses } of IN_FLIGHT) {
    await runBuilt(
      query,
      build
        .updateTable(table)
        .set({ status: sql.lit('cancelled') })
        .where('tenant_id', '=', tenantId)
        .where(sql<boolean>`${sql.ref('status')} = any(${[...statuses]}::text[])`),
    );
  }
}

/** Deactivates the tenant: its keys answer 403 ACCOUNT_INACTIVE and its users cannot sign in while its rows go. */
export async function deactivateTenantRow(query: Query, tenantId: string): Promise<void> {
  await runBuilt(query, build.updateTable('tenants').set({ is_active: sql.lit(false), updated_at: sql`now()` }).where('id', '=', tenantId));
}

/**
 * Deletes up to `limit` of the tenant's rows of `table`, in one short statement of its own: no
 * transaction holds a big tenant's rows locked for long. Answers how many went.
 */
export async function deleteRowBatch(query: Query, catalog: TenantCatalog, table: TenantTable, tenantId: string, limit: number): Promise<number> {
  const key = table.primaryKey.length ? `(${table.primaryKey.map(ident).join(', ')})` : 'ctid';
  const keyOf = table.primaryKey.length ? table.primaryKey.map((c) => `x.${ident(c)}`).join(', ') : 'x.ctid';
  // Raw(catalog): a table and primary key the catalog names.
  const [row] = await query<{ n: number }>(
    `with gone as (
       delete from ${ident(table.name)} where ${key} in (select ${keyOf} from ${ident(table.name)} x where ${tenantRowsSql(catalog, table, 'x', '$1')} limit ${Math.trunc(limit)})
       returning 1)
     select count(*)::int as n from gone`,
    [tenantId],
  );
  return row.n;
}

/** How many of the tenant's rows `table` holds now. */
export async function countTenantRows(query: Query, catalog: TenantCatalog, table: TenantTable, tenantId: string): Promise<number> {
  // Raw(catalog): a table the catalog names.
  const [row] = await query<{ n: number }>(`select count(*)::int as n from ${ident(table.name)} t where ${tenantRowsSql(catalog, table, 't', '$1')}`, [tenantId]);
  return row.n;
}

/** Deletes the sign-in attempts made with the e-mail addresses of the tenant's users. */
export async function deleteLoginAttempts(query: Query, tenantId: string): Promise<number> {
  const [row] = await runBuilt(
    query,
    build
      .with('gone', (db) =>
        db
          .deleteFrom('login_attempts')
          .where(sql`lower(email)`, 'in', db.selectFrom('users').select(sql<string>`lower(email)`.as('email')).where('tenant_id', '=', tenantId))
          .returning(sql.lit(1).as('one')),
      )
      .selectFrom('gone')
      .select(sql<number>`count(*)::int`.as('n')),
  );
  return row.n;
}

/** The tables where a row still carries the tenant's id (tenant_id, or the tenants row), with how many. */
export async function selectRemainingRows(query: Query, tenantId: string): Promise<Record<string, number>> {
  // Read again: the scan covers every table with a tenant_id column as the catalog has it now.
  const catalog = await readTenantCatalog(query);
  const remaining: Record<string, number> = {};
  for (const table of catalog.tables) {
    if (table.scope.kind === 'parent') continue;
    const n = await countTenantRows(query, catalog, table, tenantId);
    if (n > 0) remaining[table.name] = n;
  }
  return remaining;
}

