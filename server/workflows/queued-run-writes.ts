// Queued runs accepted at the same time (webhook deliveries, events, async runs without a
// concurrency limit), written together: the runs asked for in one turn of the event loop go as one
// statement, so one round trip and one durable commit (one WAL flush) accept them all. Each caller
// still answers only once its own run is committed. A lone run goes as the single-run statement.
import type { SqlPool } from '../../db/sql-pool.js';
import { createTurnBatcher, perPool } from '../common/turn-batcher.js';
import { insertQueuedRun, insertQueuedRuns, type QueuedRunGuard, type QueuedRunValues } from './store/run-intake.js';

interface QueuedRunWrite {
  values: QueuedRunValues;
  /** The same write as a statement of its own (a lone run, or the fallback). */
  guard: QueuedRunGuard | null;
}

const queuedRunWriterOf = perPool((sql: SqlPool) =>
  createTurnBatcher<QueuedRunWrite, boolean>({
    maxBatch: 64,
    // Two runs claiming one key (a delivery repeated at once) go in different statements: one
    // statement cannot claim a key twice, and the second must see the first's claim.
    conflictKey: ({ values }) => (values.claim ? `${values.run.tenantId}\u0000${values.claim.scope}\u0000${values.claim.key}` : null),
    sendOne: async ({ values, guard }) => {
      const row = await insertQueuedRun(sql.query, { guard, run: values.run, ownerId: values.ownerId, queueJob: values.queueJob, trigger: values.trigger });
      return row.created > 0;
    },
    sendMany: async (writes) => {
      const created = await insertQueuedRuns(sql, writes.map((w) => w.values));
      return writes.map((w) => created.has(w.values.run.id));
    },
  }),
);

/** Writes a queued run (with its key's claim, if any) durably; false when the key was taken already (nothing written). */
export function writeQueuedRun(sql: SqlPool, values: QueuedRunValues, guard: QueuedRunGuard | null): Promise<boolean> {
  return queuedRunWriterOf(sql).send({ values, guard });
}
