// The rows of an agent run: started (run, session and the user's turn in one statement) and
// finished (run totals, the agent's turn and the session in one statement). Steps in between are
// written by server/runs/run-steps.ts as they end.
import type { SqlPool } from '../../db/sql-pool.js';
import { estimateTokens } from '../llm/count-tokens.js';
import { insertRunStart, updateRunFinish, type AgentRunFinishRow, type AgentRunStartRow } from './store/agent-runs.js';

/** A run's start as the run path knows it; the store row adds the message's token count. */
export type RunStart = Omit<AgentRunStartRow, 'messageTokens'>;

export async function writeRunStart(sql: SqlPool, start: RunStart): Promise<void> {
  await insertRunStart(sql, { ...start, messageTokens: estimateTokens(start.message) });
}

/** A run's end as the run path knows it; the store row adds the output's token count. */
export type RunFinish = Omit<AgentRunFinishRow, 'outputTokens' | 'online'> & Partial<Pick<AgentRunFinishRow, 'online'>>;

/** Finishes a running run (a run already finished is left as it is). */
export async function writeRunFinish(sql: SqlPool, finish: RunFinish): Promise<void> {
  await updateRunFinish(sql, { ...finish, online: finish.online ?? null, outputTokens: estimateTokens(finish.output) });
}
