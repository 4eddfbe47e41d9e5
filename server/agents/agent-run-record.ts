// The rows of an agent run: started (run, session and the user's turn in one statement) and
// finished (run totals, the agent's turn and the session in one statement). Steps in between are
// written by server/runs/run-steps.ts as they end.
import type { SqlPool } from '../../db/sql-pool.js';
import type { AgentRunStatus } from '../../db/entities/agent.js';
import { estimateTokens } from '../llm/count-tokens.js';

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

// Run rows are written with asynchronous commit, as intent runs are: no wait for the WAL flush
// (about a millisecond a statement here); a crash can lose the last fraction of a second of run
// history, never part of a statement, and the order of what was written is kept.
const START_SQL = `
with async_commit as (select set_config('synchronous_commit', 'off', true)),
session as (
  insert into agent_sessions (id, tenant_id, agent_id, user_id, status, turns, last_activity_at, created_at)
  values ($1, $2, $3, $4, 'active', 0, now(), now())
  on conflict (id) do update set last_activity_at = now(), user_id = coalesce(agent_sessions.user_id, excluded.user_id)
  returning id
),
run as (
  insert into agent_runs (id, tenant_id, agent_id, session_id, user_id, status, input, output, model, steps, total_tokens, total_cost,
                          total_latency_ms, max_cost_usd, error, started_at, completed_at)
  select $5, $2, $3, session.id, $4, 'running', $6::jsonb, null, $7, 0, 0, 0, 0, $8, null, now(), null from session
  returning 1
),
message as (
  insert into agent_messages (id, tenant_id, session_id, run_id, role, content, tokens, created_at)
  select gen_random_uuid(), $2, session.id, $5, 'user', $9, $10, clock_timestamp() from session
  returning 1
)
select (select count(*) from run) + (select count(*) from message) + (select count(*) from async_commit) as written`;

export async function writeRunStart(sql: SqlPool, start: RunStart): Promise<void> {
  await sql.query(
    START_SQL,
    [
      start.sessionId, start.tenantId, start.agentId, start.userId, start.runId, JSON.stringify(start.input), start.model,
      start.maxCostUsd === null ? null : start.maxCostUsd.toFixed(6), start.message, estimateTokens(start.message),
    ],
    'liya_agent_run_start',
  );
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

// The session is named by its id (a parameter), so the planner always takes the primary key.
const FINISH_SQL = `
with async_commit as (select set_config('synchronous_commit', 'off', true)),
run as (
  update agent_runs set status = $3, output = $4, steps = $5, total_tokens = $6, total_cost = $7, total_latency_ms = $8,
         error = $9::jsonb, model = coalesce($10, model), completed_at = now()
   where id = $1 and tenant_id = $2 and status = 'running'
  returning session_id
),
message as (
  insert into agent_messages (id, tenant_id, session_id, run_id, role, content, tokens, created_at)
  select gen_random_uuid(), $2, $13, $1, 'assistant', $4, $11, clock_timestamp() from run where length($4) > 0
  returning 1
),
session as (
  update agent_sessions set turns = turns + 1, status = $12, last_activity_at = now()
   where id = $13 and tenant_id = $2 and exists (select 1 from run)
  returning 1
)
select (select count(*) from run) + (select count(*) from async_commit) as finished`;

/** Finishes a running run (a run already finished is left as it is). */
export async function writeRunFinish(sql: SqlPool, finish: RunFinish): Promise<void> {
  await sql.query(
    FINISH_SQL,
    [
      finish.runId, finish.tenantId, finish.status, finish.output, finish.steps, finish.totalTokens, finish.totalCost.toFixed(6),
      Math.round(finish.totalLatencyMs), finish.error === null ? null : JSON.stringify(finish.error), finish.model,
      estimateTokens(finish.output), finish.status === 'needs_input' ? 'needs_input' : 'active', finish.sessionId,
    ],
    'liya_agent_run_finish',
  );
}
