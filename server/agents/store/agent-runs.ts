// The agent_runs, agent_sessions and agent_messages tables (a run, its conversation and the
// transcript); this module alone writes them. Every statement but the hourly pruning runs on the
// SqlPool, as it did before the move (no unit of work): the run path is benchmarked by round trips, and the read
// endpoints keep exactly the texts (casts, counts) their answers were built on, so they stay raw.
import { kyselyOf } from '../../../db/kysely.js';
import { sql } from 'kysely';
import type { EntityManager } from '../../../db/orm.js';
import type { SqlPool } from '../../../db/sql-pool.js';
import type { AgentRunStatus } from '../../../db/column-values.js';
import { anyId } from '../../../db/id-list.js';
import { cappedCountSql, cursorTimeSql } from '../../../db/keyset.js';
import type { PageRequest } from '../../common/pagination.js';

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

/** The conditions of a list of the agent's runs, written for the filters given (each set has its index). */
function runsWhere(tenantId: string, agentId: string, filter: { status: AgentRunStatus | null; sessionId: string | null }) {
  const params: unknown[] = [tenantId, agentId];
  const conditions = ['tenant_id = $1', 'agent_id = $2'];
  // No `($n is null or col = $n)`: the planner cannot pick the index of a filter it cannot see.
  if (filter.status !== null) conditions.push(`status = $${params.push(filter.status)}`);
  if (filter.sessionId !== null) conditions.push(`session_id = $${params.push(filter.sessionId)}`);
  return { conditions, params };
}

/**
 * A page of the agent's runs, newest first (ties by id), and one more row when there is a next page.
 * On (tenant_id, agent_id[, status], started_at desc, id desc), or (session_id, started_at desc, id
 * desc) with a session: the scan starts at the offset or the cursor and stops after the page.
 */
export async function listAgentRuns(
  sql: SqlPool,
  tenantId: string,
  agentId: string,
  filter: { status: AgentRunStatus | null; sessionId: string | null },
  page: PageRequest,
): Promise<(AgentRunRow & { cursor_key: string })[]> {
  const { conditions, params } = runsWhere(tenantId, agentId, filter);
  if (page.after) conditions.push(`(started_at, id) < ($${params.push(page.after.key)}::timestamptz, $${params.push(page.after.id)}::uuid)`);
  // Raw: on the SqlPool, as before (text casts shape the answer).
  return sql.query<AgentRunRow & { cursor_key: string }>(
    `select ${RUN_COLUMNS}, ${cursorTimeSql('started_at')} as cursor_key from agent_runs where ${conditions.join(' and ')}
      order by started_at desc, id desc limit $${params.push(page.limit + 1)} offset $${params.push(page.offset)}`,
    params,
  );
}

/** How many of the agent's runs match the filter, counted up to `cap` + 1 (pageOfRows says how far). */
export async function countAgentRuns(sql: SqlPool, tenantId: string, agentId: string, filter: { status: AgentRunStatus | null; sessionId: string | null }, cap: number): Promise<number> {
  const { conditions, params } = runsWhere(tenantId, agentId, filter);
  // Raw: on the SqlPool, as before.
  const [count] = await sql.query<{ n: number }>(cappedCountSql(`select 1 from agent_runs where ${conditions.join(' and ')}`, cap), params);
  return count.n;
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

/**
 * A page of the agent's sessions, latest activity first (ties by id), and one more row when there is
 * a next page; on (tenant_id, agent_id, last_activity_at desc, id desc).
 */
export async function listAgentSessions(sql: SqlPool, tenantId: string, agentId: string, page: PageRequest): Promise<(AgentSessionRow & { cursor_key: string })[]> {
  const params: unknown[] = [tenantId, agentId];
  const after = page.after ? `and (last_activity_at, id) < ($${params.push(page.after.key)}::timestamptz, $${params.push(page.after.id)}::uuid)` : '';
  // Raw: on the SqlPool, as before (text casts shape the answer).
  return sql.query<AgentSessionRow & { cursor_key: string }>(
    `select id::text, user_id, turns, status, last_activity_at, created_at, ${cursorTimeSql('last_activity_at')} as cursor_key from agent_sessions
      where tenant_id = $1 and agent_id = $2 ${after}
      order by last_activity_at desc, id desc limit $${params.push(page.limit + 1)} offset $${params.push(page.offset)}`,
    params,
  );
}

/** How many sessions the agent has, counted up to `cap` + 1 (pageOfRows says how far). */
export async function countAgentSessions(sql: SqlPool, tenantId: string, agentId: string, cap: number): Promise<number> {
  // Raw: on the SqlPool, as before.
  const [count] = await sql.query<{ n: number }>(cappedCountSql('select 1 from agent_sessions where tenant_id = $1 and agent_id = $2', cap), [tenantId, agentId]);
  return count.n;
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

/** Up to `limit` of the end user's agent sessions (ids), on (tenant_id, user_id). */
export async function listUserAgentSessionIds(em: EntityManager, tenantId: string, userId: string, limit: number): Promise<string[]> {
  const rows = await kyselyOf(em).selectFrom('agent_sessions').select('id').where('tenant_id', '=', tenantId).where('user_id', '=', userId).limit(limit).execute();
  return rows.map((r) => r.id);
}

/** How many runs of the end user's agent sessions are running now. */
export async function countRunningUserAgentRuns(em: EntityManager, tenantId: string, userId: string): Promise<number> {
  const row = await kyselyOf(em)
    .selectFrom('agent_runs as r')
    .innerJoin('agent_sessions as s', 's.id', 'r.session_id')
    .select(sql<number>`count(*)::int`.as('n'))
    .where('s.tenant_id', '=', tenantId)
    .where('s.user_id', '=', userId)
    .where('r.status', '=', 'running')
    .executeTakeFirstOrThrow();
  return row.n;
}

/** The tenant's agent sessions among `ids`, and the sessions of its agent runs among `ids`. */
export async function findAgentSessionsNamed(em: EntityManager, tenantId: string, ids: string[]): Promise<string[]> {
  if (!ids.length) return [];
  const db = kyselyOf(em);
  const rows = await db
    .selectFrom('agent_sessions')
    .select('id')
    .where('tenant_id', '=', tenantId)
    .where((eb) => eb.or([anyId('id', ids), eb('id', 'in', db.selectFrom('agent_runs').select('session_id').where('tenant_id', '=', tenantId).where(anyId('id', ids)))]))
    .execute();
  return rows.map((r) => r.id);
}

/** The runs of the tenant's agent sessions `sessionIds`. */
export async function listRunIdsOfSessions(em: EntityManager, tenantId: string, sessionIds: string[]): Promise<string[]> {
  if (!sessionIds.length) return [];
  const rows = await kyselyOf(em).selectFrom('agent_runs').select('id').where('tenant_id', '=', tenantId).where(anyId('session_id', sessionIds)).execute();
  return rows.map((r) => r.id);
}

/** Deletes the tenant's agent sessions `ids` with their runs and messages; how many of each. */
export async function deleteAgentSessions(em: EntityManager, tenantId: string, ids: string[]): Promise<{ sessions: number; runs: number; messages: number }> {
  if (!ids.length) return { sessions: 0, runs: 0, messages: 0 };
  const db = kyselyOf(em);
  // Children first, each by its own statement, so each is counted (the foreign keys would take them silently).
  const messages = await db.deleteFrom('agent_messages').where('tenant_id', '=', tenantId).where(anyId('session_id', ids)).executeTakeFirst();
  const runs = await db.deleteFrom('agent_runs').where('tenant_id', '=', tenantId).where(anyId('session_id', ids)).executeTakeFirst();
  const sessions = await db.deleteFrom('agent_sessions').where('tenant_id', '=', tenantId).where(anyId('id', ids)).executeTakeFirst();
  return { sessions: Number(sessions.numDeletedRows ?? 0n), runs: Number(runs.numDeletedRows ?? 0n), messages: Number(messages.numDeletedRows ?? 0n) };
}
