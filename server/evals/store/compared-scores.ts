// The scores a run comparison reads from eval_results (written by store/eval-results.ts); this module
// writes nothing.
import { sql } from 'kysely';
import { build, statement } from '../../../db/statements.js';
import type { SqlRunner } from './eval-runs.js';

/** A scored result as the statistics of a comparison need it: no input or output, only the input's hash. */
export interface ScoreRow {
  case_id: string | null;
  position: number;
  /** md5 of the input (and message) as stored: cases paired by position must hold the same input. */
  input_hash: string;
  score: number;
  passed: boolean | null;
  dimension_scores: Record<string, number> | null;
}

/**
 * The run's scored results in order, scores only. A comparison of thousands of cases would
 * otherwise fetch and parse every input and output on the event loop to use none of them.
 */
export async function listScoredScores(sql: SqlRunner, runId: string): Promise<ScoreRow[]> {
  return SCORED_SCORES.run(sql.query, { runId });
}

const SCORED_SCORES = statement<{ runId: string }>()('eval_compare_scores', (p) =>
  build
    .selectFrom('eval_results')
    .select([
      sql<string | null>`case_id::text`.as('case_id'), 'position', sql<string>`md5(input::text || coalesce(message, ''))`.as('input_hash'), 'score', 'passed', 'dimension_scores',
    ])
    .where('run_id', '=', p.runId)
    .where('status', '=', sql.lit('scored'))
    .orderBy('position'),
).as<ScoreRow>();
