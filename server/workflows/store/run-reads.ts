// Reads of the workflow_runs table: a run's status, outcome and answer, a workflow's run list, and
// what a retry or a callback delivery needs. Reads only (the run-*.ts modules of this folder write
// the table). On the SqlPool, built with db/statements.ts.
import { sql, type SelectQueryBuilder } from 'kysely';
import type { WorkflowRunStatus } from '../../../db/column-values.js';
import { newestFirstPage } from '../../../db/keyset.js';
import type { Database } from '../../../db/kysely.js';
import type { SqlPool } from '../../../db/sql-pool.js';
import { build, runBuilt } from '../../../db/statements.js';
import type { PageRequest } from '../../common/pagination.js';
import { lit } from './run-rows.js';
import type { StateScope } from './workflow-state.js';

/** The tenant's run with this id. */
const runOf = (tenantId: string, runId: string) => build.selectFrom('workflow_runs').where('id', '=', runId).where('tenant_id', '=', tenantId);

/** A run's conversation, status and output. */
export async function findRunOutcome(sql: SqlPool, tenantId: string, runId: string) {
  const [row] = await runBuilt(sql, runOf(tenantId, runId).select(['conversation_id', 'status', 'output']));
  return row as { conversation_id: string; status: WorkflowRunStatus; output: unknown };
}

/** A run by its id alone (any tenant). */
const runById = (runId: string) => build.selectFrom('workflow_runs').where('id', '=', runId);

const ONE = lit(1).as('one');

/** Whether the run exists (any tenant). */
export const runExists = async (sql: SqlPool, runId: string) => (await runBuilt(sql, runById(runId).select(ONE))).length > 0;

/** A run's status, or null when there is no such run. */
export async function findRunStatus(sql: SqlPool, tenantId: string, runId: string): Promise<{ status: WorkflowRunStatus } | null> {
  const [row] = await runBuilt(sql, runOf(tenantId, runId).select('status'));
  return row ?? null;
}

/** A run's status by its id alone. */
export async function findRunStatusById(sql: SqlPool, runId: string): Promise<{ status: string } | null> {
  const [run] = await runBuilt(sql, runById(runId).select('status'));
  return run ?? null;
}

const waitingForInputOf = (tenantId: string, workflowId: string, conversationId: string) =>
  build
    .selectFrom('workflow_runs')
    .select('id')
    .where('tenant_id', '=', tenantId)
    .where('workflow_id', '=', workflowId)
    .where('conversation_id', '=', conversationId)
    .where('status', '=', lit('needs_input'))
    .orderBy('started_at', 'desc')
    .limit(lit(1));

/** The latest run of a conversation that waits for input. */
export async function findRunWaitingForInput(sql: SqlPool, tenantId: string, workflowId: string, conversationId: string): Promise<{ id: string } | null> {
  const [waiting] = await runBuilt(sql, waitingForInputOf(tenantId, workflowId, conversationId));
  return waiting ?? null;
}

/** What a run endpoint answers of a stored run (besides its steps). */
export async function findRunResult(sql: SqlPool, tenantId: string, runId: string) {
  const [row] = await runBuilt(sql, runOf(tenantId, runId).select(['conversation_id', 'status', 'output', 'approval_id', 'resume_at']));
  return (row as { conversation_id: string; status: WorkflowRunStatus; output: unknown; approval_id: string | null; resume_at: Date | null } | undefined) ?? null;
}

export interface RunRow {
  id: string;
  conversation_id: string;
  version: number | null;
  scope: StateScope;
  status: WorkflowRunStatus;
  triggered_by: string;
  input: Record<string, unknown>;
  output: unknown;
  error: Record<string, unknown> | null;
  steps_done: number;
  approval_id: string | null;
  resume_at: Date | null;
  started_at: Date;
  completed_at: Date | null;
}

const RUN_ROW_COLUMNS = [
  'id', 'conversation_id', 'version', 'scope', 'status', 'triggered_by', 'input', 'output', 'error', 'steps_done', 'approval_id', 'resume_at', 'started_at', 'completed_at',
] as const;

/** A workflow's runs, optionally of one status (each filter has its index). */
function runsOf(tenantId: string, workflowId: string, status: WorkflowRunStatus | null) {
  // No `($n is null or status = $n)`: with it the planner cannot use the status index, and the
  // count read every run of the workflow.
  return build
    .selectFrom('workflow_runs')
    .where('tenant_id', '=', tenantId)
    .where('workflow_id', '=', workflowId)
    .$if(status !== null, (qb) => qb.where('status', '=', status!));
}

/**
 * A workflow's runs, newest first (ties by id), optionally of one status, and one more row when there
 * is a next page; on (tenant_id, workflow_id[, status], started_at desc, id desc), from the offset or
 * the cursor.
 */
export async function listRuns(sql: SqlPool, tenantId: string, workflowId: string, status: WorkflowRunStatus | null, page: PageRequest): Promise<(RunRow & { cursor_key: string })[]> {
  return (await runBuilt(sql, newestFirstPage(runsOf(tenantId, workflowId, status).select(RUN_ROW_COLUMNS), 'started_at', page))) as (RunRow & { cursor_key: string })[];
}

/** `count(*)` over at most `cap` + 1 of the rows `matching` selects (see countCapped in db/keyset.ts). */
function cappedCountOf<TB extends keyof Database>(matching: SelectQueryBuilder<Database, TB, object>, cap: number) {
  return build.selectFrom(matching.select(ONE).limit(lit(Math.trunc(cap) + 1)).as('capped')).select(sql<number>`count(*)::int`.as('n'));
}

/** How many runs `listRuns` pages through, counted up to `cap` + 1 (pageOfRows says how far). */
export async function countRuns(sql: SqlPool, tenantId: string, workflowId: string, status: WorkflowRunStatus | null, cap: number): Promise<number> {
  const [count] = await runBuilt(sql, cappedCountOf(runsOf(tenantId, workflowId, status), cap));
  return count.n;
}

/** A run of the workflow. */
export async function findRun(sql: SqlPool, tenantId: string, workflowId: string, runId: string): Promise<RunRow | null> {
  const [row] = await runBuilt(sql, runOf(tenantId, runId).where('workflow_id', '=', workflowId).select(RUN_ROW_COLUMNS));
  return (row as RunRow | undefined) ?? null;
}

/** A run of the tenant by its id alone. */
export async function findRunById(sql: SqlPool, tenantId: string, runId: string): Promise<RunRow | null> {
  const [row] = await runBuilt(sql, runOf(tenantId, runId).select(RUN_ROW_COLUMNS));
  return (row as RunRow | undefined) ?? null;
}

/** The workflow a run of the tenant belongs to. */
export async function findRunWorkflowId(sql: SqlPool, tenantId: string, runId: string): Promise<{ workflow_id: string } | null> {
  const [row] = await runBuilt(sql, runOf(tenantId, runId).select('workflow_id'));
  return row ?? null;
}

/** What deciding whether a run can be retried needs. */
export async function findRunRetryState(sql: SqlPool, tenantId: string, workflowId: string, runId: string) {
  const [row] = await runBuilt(sql, runOf(tenantId, runId).where('workflow_id', '=', workflowId).select(['status', 'steps_done', 'error']));
  return (row as { status: WorkflowRunStatus; steps_done: number; error: { step_id?: string } | null } | undefined) ?? null;
}

const callbackOf = (tenantId: string, runId: string) =>
  build
    .selectFrom('workflow_runs as r')
    .innerJoin('workflows as w', 'w.id', 'r.workflow_id')
    .select(['r.workflow_id', 'r.callback_url', 'r.status', 'w.webhook_secret'])
    .where('r.id', '=', runId)
    .where('r.tenant_id', '=', tenantId);

/** A run's callback URL and status, with its workflow's stored webhook secret. */
export async function findRunCallback(sql: SqlPool, tenantId: string, runId: string) {
  const [row] = await runBuilt(sql, callbackOf(tenantId, runId));
  return (row as { workflow_id: string; callback_url: string | null; status: string; webhook_secret: string | null } | undefined) ?? null;
}
