// The scores a run comparison reads from eval_results (written by store/eval-runs.ts); this module
// writes nothing.
import type { SqlRunner } from './eval-runs.js';

/** A scored result as the statistics of a comparison need it: no input or output. */
export interface ScoreRow {
  case_id: string | null;
  position: number;
  score: number;
  passed: boolean | null;
  dimension_scores: Record<string, number> | null;
}

/**
 * The run's scored results in order, scores only. A comparison of thousands of cases would
 * otherwise fetch and parse every input and output on the event loop to use none of them.
 */
export async function listScoredScores(sql: SqlRunner, runId: string): Promise<ScoreRow[]> {
  // Raw: it runs on the SqlPool, like the other reads of a comparison (store/eval-runs.ts), where Kysely is not available.
  return sql.query<ScoreRow>(
    `select case_id::text, position, score, passed, dimension_scores from eval_results where run_id = $1 and status = 'scored' order by position`,
    [runId],
    'eval_compare_scores',
  );
}
