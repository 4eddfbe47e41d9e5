// Reading what agents did: runs (with their step trace), sessions and transcripts. Every query
// is scoped to the tenant and the agent, so another tenant's run or session is a 404.
import type { AgentRunStatus } from '../../db/column-values.js';
import type { EntityManager } from '../../db/orm.js';
import { pageOfRows, pageRequestOf, type HistoryList, type HistoryPageQuery } from '../common/pagination.js';
import { iso, isoRequired, isUuid } from '../common/schemas.js';
import type { AppDeps } from '../deps.js';
import { notFound } from '../errors.js';
import { readRunSteps } from '../runs/run-steps.js';
import { requireAgent } from './agents.service.js';
import {
  countAgentRuns, countAgentSessions, findAgentRun, findAgentSessionId, listAgentRuns as listAgentRunRows, listAgentSessions as listAgentSessionRows,
  listSessionMessages, type AgentRunRow,
} from './store/agent-runs.js';

const toSummary = (r: AgentRunRow) => ({
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

const RUNS_LIST: HistoryList = { name: 'agent_runs', key: 'time' };
const SESSIONS_LIST: HistoryList = { name: 'agent_sessions', key: 'time' };

export async function listAgentRuns(
  em: EntityManager,
  deps: AppDeps,
  tenantId: string,
  agentKey: string,
  filter: { status?: AgentRunStatus; sessionId?: string },
  query: HistoryPageQuery,
) {
  const request = pageRequestOf(RUNS_LIST, query);
  const agent = await requireAgent(em, tenantId, agentKey);
  const where = { status: filter.status ?? null, sessionId: filter.sessionId ?? null };
  // An id that cannot be a session matches no run.
  const rows = where.sessionId && !isUuid(where.sessionId) ? [] : await listAgentRunRows(deps.sql, tenantId, agent.id, where, request);
  const page = await pageOfRows(RUNS_LIST, request, rows, (r) => ({ key: r.cursor_key, id: r.id }), (cap) => countAgentRuns(deps.sql, tenantId, agent.id, where, cap));
  return { runs: page.items.map(toSummary), pagination: page.pagination };
}

export async function getAgentRun(em: EntityManager, deps: AppDeps, tenantId: string, agentKey: string, runId: string) {
  const agent = await requireAgent(em, tenantId, agentKey);
  const row = isUuid(runId) ? await findAgentRun(deps.sql, tenantId, agent.id, runId) : undefined;
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

export async function listAgentSessions(em: EntityManager, deps: AppDeps, tenantId: string, agentKey: string, query: HistoryPageQuery) {
  const request = pageRequestOf(SESSIONS_LIST, query);
  const agent = await requireAgent(em, tenantId, agentKey);
  const rows = await listAgentSessionRows(deps.sql, tenantId, agent.id, request);
  const page = await pageOfRows(SESSIONS_LIST, request, rows, (r) => ({ key: r.cursor_key, id: r.id }), (cap) => countAgentSessions(deps.sql, tenantId, agent.id, cap));
  return {
    sessions: page.items.map((r) => ({
      session_id: r.id,
      user_id: r.user_id,
      turns: r.turns,
      status: r.status,
      last_activity_at: isoRequired(r.last_activity_at),
      created_at: isoRequired(r.created_at),
    })),
    pagination: page.pagination,
  };
}

export async function getAgentTranscript(em: EntityManager, deps: AppDeps, tenantId: string, agentKey: string, sessionId: string) {
  const agent = await requireAgent(em, tenantId, agentKey);
  const session = isUuid(sessionId) ? await findAgentSessionId(deps.sql, tenantId, agent.id, sessionId) : undefined;
  if (!session) throw notFound('Session');
  const rows = await listSessionMessages(deps.sql, tenantId, session.id);
  return { session_id: session.id, turns: rows.map((r) => ({ role: r.role, content: r.content, run_id: r.run_id, created_at: isoRequired(r.created_at) })) };
}
