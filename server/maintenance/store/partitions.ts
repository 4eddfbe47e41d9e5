// The monthly partitions of the partitioned histories (usage_events, session_messages): made ahead
// and dropped once every tenant's retention has passed them. Partitions are named
// `<table>_pYYYY_MM` (UTC month) beside one `<table>_default` (Migration20261128140000_partition_history).
//
// Raw SQL: DDL (CREATE, ATTACH, DROP) has no parameters, and the catalogue is read by name. Every
// name and bound written into it is built here from a table of this list and a Date, never from
// request data.
//
// Locks: each change is one short transaction under a lock_timeout. Should it wait longer for a
// lock (a long query on the table, a transaction writing sessions), it gives up, and the next run
// tries again; live requests queue behind it for at most that long.
// - A new month is made as a table of its own, then attached: ATTACH takes SHARE UPDATE EXCLUSIVE
//   on the parent (reads and writes go on), ACCESS EXCLUSIVE on the new table and the DEFAULT
//   partition (which it checks holds no row of that month, an instant on an empty one), and SHARE
//   ROW EXCLUSIVE on the table each foreign key references, to add the partition's key.
// - An old month is dropped in one statement. PostgreSQL refuses DETACH ... CONCURRENTLY while a
//   DEFAULT partition exists, and a plain DETACH takes ACCESS EXCLUSIVE on the parent as DROP does,
//   plus a lock on the referenced table (to turn the inherited foreign key into a table's own): DROP
//   of the partition takes fewer locks, for a moment.
import { sql as kysql } from 'kysely';
import type { SqlPool } from '../../../db/sql-pool.js';
import { build, runBuilt, type SqlRunner } from '../../../db/statements.js';

export const PARTITIONED_TABLES = ['usage_events', 'session_messages'] as const;
export type PartitionedTable = (typeof PARTITIONED_TABLES)[number];

/** A month's partition of a table: its name and UTC bounds. */
export interface MonthPartition {
  name: string;
  from: Date;
  to: Date;
}

const pad = (n: number) => String(n).padStart(2, '0');

/** The partition of `table` for the UTC month starting at `month`. */
export function monthPartition(table: PartitionedTable, month: Date): MonthPartition {
  const from = new Date(Date.UTC(month.getUTCFullYear(), month.getUTCMonth(), 1));
  const to = new Date(Date.UTC(month.getUTCFullYear(), month.getUTCMonth() + 1, 1));
  return { name: `${table}_p${from.getUTCFullYear()}_${pad(from.getUTCMonth() + 1)}`, from, to };
}

/** The month partitions `table` has now (the DEFAULT partition aside), oldest first. */
export async function listMonthPartitions(sql: SqlPool, table: PartitionedTable): Promise<MonthPartition[]> {
  // Raw(catalog): pg_inherits and pg_class.
  const rows = await sql.query<{ name: string }>(
    `select c.relname as name from pg_inherits i join pg_class c on c.oid = i.inhrelid where i.inhparent = $1::regclass`,
    [table],
  );
  const pattern = new RegExp(`^${table}_p(\\d{4})_(\\d{2})$`);
  return rows
    .map((r) => pattern.exec(r.name))
    .filter((m): m is RegExpExecArray => m !== null)
    .map((m) => monthPartition(table, new Date(Date.UTC(Number(m[1]), Number(m[2]) - 1, 1))))
    .sort((a, b) => a.from.getTime() - b.from.getTime());
}

/** SQLSTATE lock_not_available: a lock_timeout ran out. */
export const isLockTimeout = (err: unknown) => (err as { code?: string } | null)?.code === '55P03';

/** `SET LOCAL lock_timeout` for the rest of the transaction `query` runs in (set_config, is_local). */
export async function setLocalLockTimeout(query: SqlRunner, ms: number): Promise<void> {
  await runBuilt(query, build.selectNoFrom((eb) => eb.fn('set_config', [kysql.lit('lock_timeout'), eb.val(`${Math.round(ms)}ms`), kysql.lit(true)]).as('lock_timeout')));
}

const literal = (d: Date) => `'${d.toISOString()}'`;

/**
 * Makes the partition and attaches it. Rows of its month that reached the DEFAULT partition
 * meanwhile (the job had not run for months) move into it first, in the same transaction.
 * Returns false when a lock was not granted within `lockTimeoutMs` (nothing changed).
 */
export async function attachMonthPartition(sql: SqlPool, table: PartitionedTable, partition: MonthPartition, lockTimeoutMs: number): Promise<boolean> {
  try {
    await sql.transaction(async (query) => {
      await setLocalLockTimeout(query, lockTimeoutMs);
      // Raw(catalog): DDL.
      await query(`create table "${partition.name}" (like "${table}" including defaults including constraints)`);
      // Raw(catalog): the month's rows, from the default partition into its own.
      await query(
        `with moved as (delete from "${table}_default" where created_at >= ${literal(partition.from)} and created_at < ${literal(partition.to)} returning *)
         insert into "${partition.name}" select * from moved`,
      );
      // Raw(catalog): DDL.
      await query(`alter table "${table}" attach partition "${partition.name}" for values from (${literal(partition.from)}) to (${literal(partition.to)})`);
    });
    return true;
  } catch (err) {
    if (isLockTimeout(err)) return false;
    throw err;
  }
}

/** Drops the partition with its rows. Returns false when a lock was not granted within `lockTimeoutMs`. */
export async function dropMonthPartition(sql: SqlPool, partition: MonthPartition, lockTimeoutMs: number): Promise<boolean> {
  try {
    await sql.transaction(async (query) => {
      await setLocalLockTimeout(query, lockTimeoutMs);
      // Raw(catalog): DDL.
      await query(`drop table "${partition.name}"`);
    });
    return true;
  } catch (err) {
    if (isLockTimeout(err)) return false;
    throw err;
  }
}
