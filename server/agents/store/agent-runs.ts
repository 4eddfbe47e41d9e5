// The agent_runs, agent_sessions and agent_messages tables (a run, its conversation and the
// transcript); this module alone writes them. Every statement but the hourly pruning runs on the
// SqlPool, as it did before the move (no unit of work): the run path is benchmarked by round trips, and the read
// endpoints keep the casts and counts their answers were built on. The run path's writes stay raw
// multi-table statements (one round trip each).
import { kyselyOf, type Database } from '../../../db/kysely.js';
import { build, runBuilt, statement } from '../../../db/statements.js';
import { sql, type SelectQueryBuilder } from 'kysely';
import type { EntityManager } from '../../../db/orm.js';
import type { SqlPool } from '../../../db/sql-pool.js';
import type { AgentRunStatus } from '../../../db/column-values.js';
import { anyId } from '../../../db/id-list.js';
import { newestFirstPage } from '../../../db/keyset.js';
import type { PageRequest } from '../../common/pagination.js';
import { onlineSampleSql } from '../../runs/store/online-samples.js';

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

// Raw(other): a hot multi-CTE statement writing three tables (async commit) in one round trip, a named prepared statement.
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
  /** Queue the run for online evaluation by these rules, with its input (server/runs/online-sampling.ts); null: not sampled. */
  online: { ruleIds: string[]; input: Record<string, unknown> } | null;
}

// Raw(other): a hot multi-CTE statement writing three tables (async commit) in one round trip, a named prepared statement.
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

// A sampled run's online evaluation samples, written by the run's own finish: the user's message
// as the model saw it (after the input guardrails) and the agent's answer.
// Raw(other): liya_agent_run_finish with the sample CTE, its own named prepared statement.
const FINISH_SAMPLE_SQL = FINISH_SQL.replace(
  'select (select count(*) from run) + (select count(*) from async_commit) as finished',
  `, ${onlineSampleSql({ tenant: '$2::uuid', rules: '$14', sourceKind: `'agent'`, sourceId: '$1::text', input: '$15::jsonb', output: 'to_jsonb($4::text)', latencyMs: '$8::int', costUsd: '$7::numeric' })}
select (select count(*) from run) + (select count(*) from async_commit) + 0 * (select count(*) from online_sample) as finished`,
);

/** Finishes a running run, the agent's turn and the session in one statement (a run already finished is left as it is). */
export async function updateRunFinish(sql: SqlPool, finish: AgentRunFinishRow): Promise<void> {
  const params: unknown[] = [
    finish.runId, finish.tenantId, finish.status, finish.output, finish.steps, finish.totalTokens, finish.totalCost.toFixed(6),
    Math.round(finish.totalLatencyMs), finish.error === null ? null : JSON.stringify(finish.error), finish.model,
    finish.outputTokens, finish.status === 'needs_input' ? 'needs_input' : 'active', finish.sessionId,
  ];
  if (!finish.online?.ruleIds.length) return void (await sql.query(FINISH_SQL, params, 'liya_agent_run_finish'));
  await sql.query(FINISH_SAMPLE_SQL, [...params, finish.online.ruleIds, JSON.stringify(finish.online.input)], 'liya_agent_run_finish_sample');
}

/** The agent's session with this id (the caller checks the id is a UUID), or undefined. */
export async function findAgentSession(
  sql: SqlPool,
  tenantId: string,
  agentId: string,
  sessionId: string,
): Promise<{ id: string; user_id: string | null; status: string } | undefined> {
  const [session] = await FIND_SESSION.run(sql, { sessionId, tenantId, agentId });
  return session;
}

const FIND_SESSION = statement<{ sessionId: string; tenantId: string; agentId: string }>()('liya_agent_session', (p) =>
  build
    .selectFrom('agent_sessions')
    .select(['id', 'user_id', 'status'])
    .where('id', '=', p.sessionId)
    .where('tenant_id', '=', p.tenantId)
    .where('agent_id', '=', p.agentId),
);

/** At most this many earlier messages are read, whatever the budget. */
const HISTORY_SCAN = 200;

/** The session's latest messages (at most HISTORY_SCAN), newest first, each with the session's message count. */
export async function listRecentMessages(
  sql: SqlPool,
  tenantId: string,
  sessionId: string,
): Promise<{ role: 'user' | 'assistant'; content: string; tokens: number; total: string }[]> {
  return RECENT_MESSAGES.run(sql, { tenantId, sessionId });
}

const RECENT_MESSAGES = statement<{ tenantId: string; sessionId: string }>()('liya_agent_history', (p) =>
  build
    .selectFrom('agent_messages')
    .select(['role', 'content', 'tokens', sql<string>`count(*) over ()`.as('total')])
    .where('tenant_id', '=', p.tenantId)
    .where('session_id', '=', p.sessionId)
    .orderBy('created_at', 'desc')
    .orderBy('role', 'asc')
    .limit(sql.lit(HISTORY_SCAN)),
).as<{ role: 'user' | 'assistant'; content: string; tokens: number; total: string }>();

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

/** A run's columns as the API answers them (ids and the cost as text). */
const RUN_COLUMNS = [
  sql<string>`id::text`.as('id'), sql<string>`session_id::text`.as('session_id'), 'user_id', 'status', 'input', 'output', 'model', 'steps',
  sql<string>`total_cost::text`.as('total_cost'), 'total_latency_ms', 'error', 'started_at', 'completed_at',
] as const;

/** The agent's runs, narrowed by the filters given (each set has its index). */
function agentRunsOf(tenantId: string, agentId: string, filter: { status: AgentRunStatus | null; sessionId: string | null }) {
  // No `($n is null or col = $n)`: the planner cannot pick the index of a filter it cannot see.
  return build
    .selectFrom('agent_runs')
    .where('tenant_id', '=', tenantId)
    .where('agent_id', '=', agentId)
    .$if(filter.status !== null, (qb) => qb.where('status', '=', filter.status!))
    .$if(filter.sessionId !== null, (qb) => qb.where('session_id', '=', filter.sessionId!));
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
  return (await runBuilt(sql, newestFirstPage(agentRunsOf(tenantId, agentId, filter).select(RUN_COLUMNS), 'started_at', page))) as (AgentRunRow & { cursor_key: string })[];
}

/** How many of the agent's runs match the filter, counted up to `cap` + 1 (pageOfRows says how far). */
export async function countAgentRuns(sql: SqlPool, tenantId: string, agentId: string, filter: { status: AgentRunStatus | null; sessionId: string | null }, cap: number): Promise<number> {
  const [count] = await runBuilt(sql, cappedCountOf(agentRunsOf(tenantId, agentId, filter), cap));
  return count.n;
}

/** `count(*)` over at most `cap` + 1 of the rows `matching` selects (see countCapped in db/keyset.ts). */
function cappedCountOf<TB extends keyof Database>(matching: SelectQueryBuilder<Database, TB, object>, cap: number) {
  return build.selectFrom(matching.select(sql.lit(1).as('one')).limit(sql.lit(Math.trunc(cap) + 1)).as('capped')).select(sql<number>`count(*)::int`.as('n'));
}

/** The agent's run with this id (the caller checks the id is a UUID), or undefined. */
export async function findAgentRun(sql: SqlPool, tenantId: string, agentId: string, runId: string): Promise<AgentRunRow | undefined> {
  const [row] = await runBuilt(sql, agentRunOf(tenantId, agentId, runId));
  return row as AgentRunRow | undefined;
}

function agentRunOf(tenantId: string, agentId: string, runId: string) {
  return build.selectFrom('agent_runs').select(RUN_COLUMNS).where('id', '=', runId).where('tenant_id', '=', tenantId).where('agent_id', '=', agentId);
}

export interface AgentSessionRow {
  id: string;
  user_id: string | null;
  turns: number;
  status: 'active' | 'needs_input' | 'expired';
  last_activity_at: Date;
  created_at: Date;
}

/** A session's columns as the API answers them. */
const SESSION_COLUMNS = [sql<string>`id::text`.as('id'), 'user_id', 'turns', 'status', 'last_activity_at', 'created_at'] as const;

/** The agent's sessions. */
function agentSessionsOf(tenantId: string, agentId: string) {
  return build.selectFrom('agent_sessions').where('tenant_id', '=', tenantId).where('agent_id', '=', agentId);
}

/**
 * A page of the agent's sessions, latest activity first (ties by id), and one more row when there is
 * a next page; on (tenant_id, agent_id, last_activity_at desc, id desc).
 */
export async function listAgentSessions(sql: SqlPool, tenantId: string, agentId: string, page: PageRequest): Promise<(AgentSessionRow & { cursor_key: string })[]> {
  return (await runBuilt(sql, newestFirstPage(agentSessionsOf(tenantId, agentId).select(SESSION_COLUMNS), 'last_activity_at', page))) as (AgentSessionRow & { cursor_key: string })[];
}

/** How many sessions the agent has, counted up to `cap` + 1 (pageOfRows says how far). */
export async function countAgentSessions(sql: SqlPool, tenantId: string, agentId: string, cap: number): Promise<number> {
  const [count] = await runBuilt(sql, cappedCountOf(agentSessionsOf(tenantId, agentId), cap));
  return count.n;
}

/** The id of the agent's session with this id (the caller checks the id is a UUID), or undefined. */
export async function findAgentSessionId(sql: SqlPool, tenantId: string, agentId: string, sessionId: string): Promise<{ id: string } | undefined> {
  const [session] = await runBuilt(sql, agentSessionIdOf(tenantId, agentId, sessionId));
  return session;
}

function agentSessionIdOf(tenantId: string, agentId: string, sessionId: string) {
  return build.selectFrom('agent_sessions').select(sql<string>`id::text`.as('id')).where('id', '=', sessionId).where('tenant_id', '=', tenantId).where('agent_id', '=', agentId);
}

/** Every message of the session, oldest first. */
export async function listSessionMessages(
  sql: SqlPool,
  tenantId: string,
  sessionId: string,
): Promise<{ role: 'user' | 'assistant'; content: string; run_id: string | null; created_at: Date }[]> {
  return (await runBuilt(sql, sessionMessagesOf(tenantId, sessionId))) as { role: 'user' | 'assistant'; content: string; run_id: string | null; created_at: Date }[];
}

function sessionMessagesOf(tenantId: string, sessionId: string) {
  return build
    .selectFrom('agent_messages')
    .select(['role', 'content', sql<string | null>`run_id::text`.as('run_id'), 'created_at'])
    .where('tenant_id', '=', tenantId)
    .where('session_id', '=', sessionId)
    .orderBy('created_at')
    .orderBy('role', 'desc');
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
