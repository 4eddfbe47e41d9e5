// The agent_runs, agent_sessions and agent_messages tables (a run, its conversation and the
// transcript); this module alone writes them. Every statement but the hourly pruning runs on the
// SqlPool, as it did before the move (no unit of work): the run path is benchmarked by round trips, and the read
// endpoints keep exactly the texts (casts, counts) their answers were built on, so they stay raw.
import { kyselyOf } from '../../../db/kysely.js';
import { sql } from 'kysely';
import type { EntityManager } from '../../../db/orm.js';
import type { SqlPool } from '../../../db/sql-pool.js';
import type { AgentRunStatus } from '../../../db/column-values.js';

export interface AgentRunStartRow {
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
  /** Tokens of `message` as counted for the memory budget. */
  messageTokens: number;
}

// Raw: a hot multi-CTE statement on the SqlPool, run as a named prepared statement.
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

/** Writes the run, its session (created or touched) and the user's turn in one statement. */
export async function insertRunStart(sql: SqlPool, start: AgentRunStartRow): Promise<void> {
  await sql.query(
    START_SQL,
    [
      start.sessionId, start.tenantId, start.agentId, start.userId, start.runId, JSON.stringify(start.input), start.model,
      start.maxCostUsd === null ? null : start.maxCostUsd.toFixed(6), start.message, start.messageTokens,
    ],
    'liya_agent_run_start',
  );
}

export interface AgentRunFinishRow {
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
  /** Tokens of `output` as counted for the memory budget. */
  outputTokens: number;
}

// Raw: a hot multi-CTE statement on the SqlPool, run as a named prepared statement.
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

/** Finishes a running run, the agent's turn and the session in one statement (a run already finished is left as it is). */
export async function updateRunFinish(sql: SqlPool, finish: AgentRunFinishRow): Promise<void> {
  await sql.query(
    FINISH_SQL,
    [
      finish.runId, finish.tenantId, finish.status, finish.output, finish.steps, finish.totalTokens, finish.totalCost.toFixed(6),
      Math.round(finish.totalLatencyMs), finish.error === null ? null : JSON.stringify(finish.error), finish.model,
      finish.outputTokens, finish.status === 'needs_input' ? 'needs_input' : 'active', finish.sessionId,
    ],
    'liya_agent_run_finish',
  );
}

/** The agent's session with this id (the caller checks the id is a UUID), or undefined. */
export async function findAgentSession(
  sql: SqlPool,
  tenantId: string,
  agentId: string,
  sessionId: string,
): Promise<{ id: string; user_id: string | null; status: string } | undefined> {
  // Raw: on the SqlPool, as on the run path before (no unit of work there).
  const [session] = await sql.query<{ id: string; user_id: string | null; status: string }>(
    'select id, user_id, status from agent_sessions where id = $1 and tenant_id = $2 and agent_id = $3',
    [sessionId, tenantId, agentId],
  );
  return session;
}

/** At most this many earlier messages are read, whatever the budget. */
const HISTORY_SCAN = 200;

/** The session's latest messages (at most HISTORY_SCAN), newest first, each with the session's message count. */
export async function listRecentMessages(
  sql: SqlPool,
  tenantId: string,
  sessionId: string,
): Promise<{ role: 'user' | 'assistant'; content: string; tokens: number; total: string }[]> {
  // Raw: a hot statement on the SqlPool, run as a named prepared statement.
  return sql.query<{ role: 'user' | 'assistant'; content: string; tokens: number; total: string }>(
    `select role, content, tokens, count(*) over () as total from agent_messages
      where tenant_id = $1 and session_id = $2 order by created_at desc, role asc limit ${HISTORY_SCAN}`,
    [tenantId, sessionId],
    'liya_agent_history',
  );
}

export interface AgentRunRow {
  id: string;
  session_id: string;
  user_id: string | null;
  status: AgentRunStatus;
  input: Record<string, unknown>;
  output: string | null;
  model: string | null;
  steps: number;
  total_cost: string;
  total_latency_ms: number;
  error: Record<string, unknown> | null;
  started_at: Date;
  completed_at: Date | null;
}

const RUN_COLUMNS = `id::text, session_id::text, user_id, status, input, output, model, steps, total_cost::text, total_latency_ms, error, started_at, completed_at`;

/** A page of the agent's runs, newest first, each with the count of all that match (`total`). */
export async function listAgentRuns(
  sql: SqlPool,
  tenantId: string,
  agentId: string,
  filter: { status: AgentRunStatus | null; sessionId: string | null },
  page: { limit: number; offset: number },
): Promise<(AgentRunRow & { total: string })[]> {
  // Raw: on the SqlPool, as before (text casts and the window count shape the answer).
  return sql.query<AgentRunRow & { total: string }>(
    `select ${RUN_COLUMNS}, count(*) over () as total from agent_runs
      where tenant_id = $1 and agent_id = $2 and ($3::text is null or status = $3) and ($4::uuid is null or session_id = $4)
      order by started_at desc, id limit $5 offset $6`,
    [tenantId, agentId, filter.status, filter.sessionId, page.limit, page.offset],
  );
}

/** How many of the agent's runs match the filter. */
export async function countAgentRuns(sql: SqlPool, tenantId: string, agentId: string, filter: { status: AgentRunStatus | null; sessionId: string | null }): Promise<number> {
  // Raw: on the SqlPool, as before.
  const [count] = await sql.query<{ n: string }>(
    `select count(*) as n from agent_runs where tenant_id = $1 and agent_id = $2 and ($3::text is null or status = $3) and ($4::uuid is null or session_id = $4)`,
    [tenantId, agentId, filter.status, filter.sessionId],
  );
  return Number(count.n);
}

/** The agent's run with this id (the caller checks the id is a UUID), or undefined. */
export async function findAgentRun(sql: SqlPool, tenantId: string, agentId: string, runId: string): Promise<AgentRunRow | undefined> {
  // Raw: on the SqlPool, as before (text casts shape the answer).
  const [row] = await sql.query<AgentRunRow>(`select ${RUN_COLUMNS} from agent_runs where id = $1 and tenant_id = $2 and agent_id = $3`, [runId, tenantId, agentId]);
  return row;
}

export interface AgentSessionRow {
  id: string;
  user_id: string | null;
  turns: number;
  status: 'active' | 'needs_input' | 'expired';
  last_activity_at: Date;
  created_at: Date;
}

/** A page of the agent's sessions, latest activity first, each with the count of all (`total`). */
export async function listAgentSessions(sql: SqlPool, tenantId: string, agentId: string, page: { limit: number; offset: number }): Promise<(AgentSessionRow & { total: string })[]> {
  // Raw: on the SqlPool, as before (text casts and the window count shape the answer).
  return sql.query<AgentSessionRow & { total: string }>(
    `select id::text, user_id, turns, status, last_activity_at, created_at, count(*) over () as total from agent_sessions
      where tenant_id = $1 and agent_id = $2 order by last_activity_at desc, id limit $3 offset $4`,
    [tenantId, agentId, page.limit, page.offset],
  );
}

/** How many sessions the agent has. */
export async function countAgentSessions(sql: SqlPool, tenantId: string, agentId: string): Promise<number> {
  // Raw: on the SqlPool, as before.
  const [count] = await sql.query<{ n: string }>('select count(*) as n from agent_sessions where tenant_id = $1 and agent_id = $2', [tenantId, agentId]);
  return Number(count.n);
}

/** The id of the agent's session with this id (the caller checks the id is a UUID), or undefined. */
export async function findAgentSessionId(sql: SqlPool, tenantId: string, agentId: string, sessionId: string): Promise<{ id: string } | undefined> {
  // Raw: on the SqlPool, as before.
  const [session] = await sql.query<{ id: string }>('select id::text from agent_sessions where id = $1 and tenant_id = $2 and agent_id = $3', [sessionId, tenantId, agentId]);
  return session;
}

/** Every message of the session, oldest first. */
export async function listSessionMessages(
  sql: SqlPool,
  tenantId: string,
  sessionId: string,
): Promise<{ role: 'user' | 'assistant'; content: string; run_id: string | null; created_at: Date }[]> {
  // Raw: on the SqlPool, as before.
  return sql.query<{ role: 'user' | 'assistant'; content: string; run_id: string | null; created_at: Date }>(
    `select role, content, run_id::text, created_at from agent_messages where tenant_id = $1 and session_id = $2 order by created_at, role desc`,
    [tenantId, sessionId],
  );
}

/** Agent conversations idle longer than their agent's retention (`defaultDays` when it sets none). */
export async function deleteRetiredAgentSessions(em: EntityManager, now: Date, defaultDays: number): Promise<number> {
  const result = await kyselyOf(em)
    .deleteFrom('agent_sessions as s')
    .using('agents as a')
    .whereRef('a.id', '=', 's.agent_id')
    .where('s.last_activity_at', '<', sql<Date>`${now}::timestamptz - make_interval(days => coalesce((a.memory_config->>'retention_days')::int, ${defaultDays}))`)
    .executeTakeFirst();
  return Number(result.numDeletedRows ?? 0n);
}

/** Agent runs still running that started before `startedBefore` are closed as failed at `now`. */
export async function failAbandonedAgentRuns(em: EntityManager, now: Date, startedBefore: Date): Promise<number> {
  const result = await kyselyOf(em)
    .updateTable('agent_runs')
    .set({
      status: 'failed',
      completed_at: now,
      error: sql`'{"code":"RUN_ABANDONED","message":"The process running it stopped before it ended"}'::jsonb`,
    })
    .where('status', '=', 'running')
    .where('started_at', '<', startedBefore)
    .executeTakeFirst();
  return Number(result.numUpdatedRows ?? 0n);
}
