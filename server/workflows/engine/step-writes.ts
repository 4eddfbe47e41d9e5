// Step writes of the runs this process executes at the same time, sent together: the writes asked
// for in one turn of the event loop go as one statement (one round trip, one commit) instead of
// one each. Each run still waits for its own step to be stored before its next step starts; the
// writes only share the trip. A lone write goes as the single-step statement.
import type { SqlPool } from '../../../db/sql-pool.js';
import { createTurnBatcher, perPool } from '../../common/turn-batcher.js';
import { writeRunStep, writeRunSteps, type StepRowValues, type StepRunValues } from '../store/run-step-writes.js';

interface StepWrite {
  step: StepRowValues;
  run: StepRunValues;
}

const stepWriterOf = perPool((sql: SqlPool) =>
  createTurnBatcher<StepWrite, boolean>({
    // Its arrays stay small; more wait for the next statement.
    maxBatch: 64,
    sendOne: (w) => writeRunStep(sql, w.step, w.run),
    sendMany: async (writes) => {
      const owned = await writeRunSteps(sql, writes);
      return writes.map((w) => owned.has(w.step.runId));
    },
  }),
);

/** Stores a step with its run's new position; false when `run.ownerId` no longer owns the run (nothing written). */
export function storeRunStep(sql: SqlPool, step: StepRowValues, run: StepRunValues): Promise<boolean> {
  return stepWriterOf(sql).send({ step, run });
}
