// The rows of an agent run: started (run, session and the user's turn in one statement) and
// finished (run totals, the agent's turn and the session in one statement). Steps in between are
// written by server/runs/run-steps.ts as they end.
import type { SqlPool } from '../../db/sql-pool.js';
import type { AgentRunStatus } from '../../db/column-values.js';
import { estimateTokens } from '../llm/count-tokens.js';
import { insertRunStart, updateRunFinish } from './store/agent-runs.js';

export interface RunStart {
  runId: string;
  sessionId: string;
  tenantId: string;
  agentId: string;
  userId: string | null;
  input: Record<string, unknown>;
  model: string;
  maxCostUsd: number | null;
  /** The user's message as stored in the transcript (after redaction). */
  message: string;
}

export async function writeRunStart(sql: SqlPool, start: RunStart): Promise<void> {
  await insertRunStart(sql, { ...start, messageTokens: estimateTokens(start.message) });
}

export interface RunFinish {
  runId: string;
  sessionId: string;
  tenantId: string;
  status: AgentRunStatus;
  output: string;
  steps: number;
  totalTokens: number;
  totalCost: number;
  totalLatencyMs: number;
  error: Record<string, unknown> | null;
  model: string | null;
}

/** Finishes a running run (a run already finished is left as it is). */
export async function writeRunFinish(sql: SqlPool, finish: RunFinish): Promise<void> {
  await updateRunFinish(sql, { ...finish, outputTokens: estimateTokens(finish.output) });
}
