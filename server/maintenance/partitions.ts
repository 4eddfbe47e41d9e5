import type { SqlPool } from '../../db/sql-pool.js';
import { attachMonthPartition, dropMonthPartition, listMonthPartitions, monthPartition, PARTITIONED_TABLES, type PartitionedTable } from './store/partitions.js';

/** What one upkeep did: partitions made, dropped, and changes left for the next run (a lock not granted in time). */
export interface PartitionReport {
  created: string[];
  dropped: string[];
  deferred: string[];
}

export interface PartitionOptions {
  /** Months made ahead of the current one (default 3): a few missed runs never send rows to the DEFAULT partition. */
  monthsAhead?: number;
  /** Longest wait for a lock before a change is left for the next run (default 50 ms). */
  lockTimeoutMs?: number;
}

const DAY_MS = 24 * 3600 * 1000;

/**
 * Makes the partitions of the current month and the next `monthsAhead` that are missing, and drops
 * the months that ended `keepDays[table]` days or more before `now`: the longest any tenant may keep
 * that table's rows, so no row in them is still due.
 */
export async function maintainPartitions(sql: SqlPool, now: Date, keepDays: Record<PartitionedTable, number>, options: PartitionOptions = {}): Promise<PartitionReport> {
  const monthsAhead = options.monthsAhead ?? 3;
  const lockTimeoutMs = options.lockTimeoutMs ?? 50;
  const report: PartitionReport = { created: [], dropped: [], deferred: [] };
  for (const table of PARTITIONED_TABLES) {
    const existing = await listMonthPartitions(sql, table);
    const names = new Set(existing.map((p) => p.name));
    for (let ahead = 0; ahead <= monthsAhead; ahead++) {
      const partition = monthPartition(table, new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + ahead, 1)));
      if (names.has(partition.name)) continue;
      if (await attachMonthPartition(sql, table, partition, lockTimeoutMs)) report.created.push(partition.name);
      else report.deferred.push(partition.name);
    }
    const keepFrom = now.getTime() - keepDays[table] * DAY_MS;
    for (const partition of existing) {
      if (partition.to.getTime() > keepFrom) break;
      if (await dropMonthPartition(sql, partition, lockTimeoutMs)) report.dropped.push(partition.name);
      else report.deferred.push(partition.name);
    }
  }
  return report;
}
