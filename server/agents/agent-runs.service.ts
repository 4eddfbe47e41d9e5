// Reading what agents did: runs (with their step trace), sessions and transcripts. Every query
// is scoped to the tenant and the agent, so another tenant's run or session is a 404.
import type { AgentRunStatus } from '../../db/entities/agent.js';
import type { EntityManager } from '../../db/orm.js';
import { iso, isoRequired, isUuid } from '../common/schemas.js';
import type { AppDeps } from '../deps.js';
import { notFound } from '../errors.js';
import { readRunSteps } from '../runs/run-steps.js';
import { requireAgent } from './agents.service.js';

interface RunRow {
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

const toSummary = (r: RunRow) => ({
  run_id: r.id,
  session_id: r.session_id,
  status: r.status,
  output: r.output ?? '',
  steps: r.steps,
  total_cost: Number(r.total_cost),
  total_latency_ms: r.total_latency_ms,
  user_id: r.user_id,
  model: r.model,
  error: r.error,
  started_at: isoRequired(r.started_at),
  completed_at: iso(r.completed_at),
});

export async function listAgentRuns(
  em: EntityManager,
  deps: AppDeps,
  tenantId: string,
  agentKey: string,
  filter: { status?: AgentRunStatus; sessionId?: string },
  page: { limit: number; offset: number },
) {
  const agent = await requireAgent(em, tenantId, agentKey);
  if (filter.sessionId && !isUuid(filter.sessionId)) return { runs: [], pagination: { total: 0, ...page } };
  const rows = await deps.sql.query<RunRow & { total: string }>(
    `select ${RUN_COLUMNS}, count(*) over () as total from agent_runs
      where tenant_id = $1 and agent_id = $2 and ($3::text is null or status = $3) and ($4::uuid is null or session_id = $4)
      order by started_at desc, id limit $5 offset $6`,
    [tenantId, agent.id, filter.status ?? null, filter.sessionId ?? null, page.limit, page.offset],
  );
  let total = rows.length ? Number(rows[0].total) : 0;
  if (!rows.length && page.offset > 0) {
    const [count] = await deps.sql.query<{ n: string }>(
      `select count(*) as n from agent_runs where tenant_id = $1 and agent_id = $2 and ($3::text is null or status = $3) and ($4::uuid is null or session_id = $4)`,
      [tenantId, agent.id, filter.status ?? null, filter.sessionId ?? null],
    );
    total = Number(count.n);
  }
  return { runs: rows.map(toSummary), pagination: { total, limit: page.limit, offset: page.offset } };
}

export async function getAgentRun(em: EntityManager, deps: AppDeps, tenantId: string, agentKey: string, runId: string) {
  const agent = await requireAgent(em, tenantId, agentKey);
  const [row] = isUuid(runId)
    ? await deps.sql.query<RunRow>(`select ${RUN_COLUMNS} from agent_runs where id = $1 and tenant_id = $2 and agent_id = $3`, [runId, tenantId, agent.id])
    : [];
  if (!row) throw notFound('Run');
  const steps = await readRunSteps(deps.sql, tenantId, 'agent', row.id);
  return {
    run: {
      ...toSummary(row),
      agent_key: agent.agentKey,
      input: row.input,
      trace: steps.map((s) => ({
        index: s.index,
        type: s.type as 'llm' | 'tool',
        name: s.name,
        input: s.input,
        output: s.output,
        tokens: s.tokens,
        cost_usd: s.cost_usd,
        latency_ms: s.latency_ms,
        started_at: s.started_at,
        error: s.error,
      })),
    },
  };
}

export async function listAgentSessions(em: EntityManager, deps: AppDeps, tenantId: string, agentKey: string, page: { limit: number; offset: number }) {
  const agent = await requireAgent(em, tenantId, agentKey);
  const rows = await deps.sql.query<{ id: string; user_id: string | null; turns: number; status: 'active' | 'needs_input' | 'expired'; last_activity_at: Date; created_at: Date; total: string }>(
    `select id::text, user_id, turns, status, last_activity_at, created_at, count(*) over () as total from agent_sessions
      where tenant_id = $1 and agent_id = $2 order by last_activity_at desc, id limit $3 offset $4`,
    [tenantId, agent.id, page.limit, page.offset],
  );
  let total = rows.length ? Number(rows[0].total) : 0;
  if (!rows.length && page.offset > 0) {
    const [count] = await deps.sql.query<{ n: string }>('select count(*) as n from agent_sessions where tenant_id = $1 and agent_id = $2', [tenantId, agent.id]);
    total = Number(count.n);
  }
  return {
    sessions: rows.map((r) => ({
      session_id: r.id,
      user_id: r.user_id,
      turns: r.turns,
      status: r.status,
      last_activity_at: isoRequired(r.last_activity_at),
      created_at: isoRequired(r.created_at),
    })),
    pagination: { total, limit: page.limit, offset: page.offset },
  };
}

export async function getAgentTranscript(em: EntityManager, deps: AppDeps, tenantId: string, agentKey: string, sessionId: string) {
  const agent = await requireAgent(em, tenantId, agentKey);
  const [session] = isUuid(sessionId)
    ? await deps.sql.query<{ id: string }>('select id::text from agent_sessions where id = $1 and tenant_id = $2 and agent_id = $3', [sessionId, tenantId, agent.id])
    : [];
  if (!session) throw notFound('Session');
  const rows = await deps.sql.query<{ role: 'user' | 'assistant'; content: string; run_id: string | null; created_at: Date }>(
    `select role, content, run_id::text, created_at from agent_messages where tenant_id = $1 and session_id = $2 order by created_at, role desc`,
    [tenantId, session.id],
  );
  return { session_id: session.id, turns: rows.map((r) => ({ role: r.role, content: r.content, run_id: r.run_id, created_at: isoRequired(r.created_at) })) };
}
