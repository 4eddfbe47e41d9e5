// Deciding an approval: the approval and the run's switch back to running (with the decision stored
// as how the step goes on) change in one statement, and a job continues the run. A second decision
// finds the approval decided.
import type { EntityManager } from '../../db/orm.js';
import type { WorkflowRunStatus } from '../../db/entities/workflow.js';
import type { Actor } from '../actor.js';
import { recordAudit } from '../audit/audit.service.js';
import { iso, isoRequired, isUuid } from '../common/schemas.js';
import type { AppDeps } from '../deps.js';
import { AppError, notFound } from '../errors.js';

interface ApprovalRow {
  id: string;
  run_id: string;
  workflow_id: string;
  workflow_key: string;
  step_id: string;
  loop_index: number | null;
  status: 'pending' | 'approved' | 'rejected' | 'timed_out' | 'cancelled';
  message: string;
  comment: string | null;
  decided_by: string | null;
  decided_at: Date | null;
  expires_at: Date | null;
  created_at: Date;
}

const APPROVAL_COLUMNS = `a.id::text, a.run_id::text, a.workflow_id::text, w.workflow_key, a.step_id, a.loop_index, a.status, a.message, a.comment, a.decided_by,
  a.decided_at, a.expires_at, a.created_at`;

const toApproval = (a: ApprovalRow) => ({
  id: a.id,
  run_id: a.run_id,
  workflow_id: a.workflow_id,
  workflow_key: a.workflow_key,
  step_id: a.step_id,
  loop_index: a.loop_index,
  status: a.status,
  message: a.message,
  comment: a.comment,
  decided_by: a.decided_by,
  decided_at: iso(a.decided_at),
  expires_at: iso(a.expires_at),
  created_at: isoRequired(a.created_at),
});

const DECIDE_SQL = `
with a as (
  update workflow_approvals set status = $3, comment = $4, decided_by = $5, decided_at = now()
   where id = $1 and tenant_id = $2 and status = 'pending'
  returning *
),
r as (
  update workflow_runs r set status = 'running', wait_kind = null, approval_id = null, owner_id = null, updated_at = now(),
         resume = jsonb_build_object('step_id', r.next_step_id, 'kind', 'approval', 'data',
                    jsonb_build_object('approval_id', $1::text, 'decision', $6::text, 'comment', $4::text, 'decided_by', $5::text, 'decided_at', now()))
    from a
   where r.id = a.run_id and r.status = 'awaiting_approval' and r.approval_id = a.id
  returning r.id, r.tenant_id
),
timeout as (select graphile_worker.remove_job('wf-wake:' || id::text) from r),
job as (
  select graphile_worker.add_job('workflow_continue', json_build_object('run_id', id::text, 'tenant_id', tenant_id::text), max_attempts => 10, job_key => 'wf-run:' || id::text)
    from r
)
select (select count(*) from a)::int as decided, (select count(*) from job)::int + 0 * (select count(*) from timeout)::int as continued`;

export async function decideApproval(em: EntityManager, deps: AppDeps, tenantId: string, actor: Actor, approvalId: string, decision: 'approve' | 'reject', comment: string | null) {
  if (!isUuid(approvalId)) throw notFound('Approval');
  const status = decision === 'approve' ? 'approved' : 'rejected';
  const [row] = await deps.sql.query<{ decided: number; continued: number }>(DECIDE_SQL, [approvalId, tenantId, status, comment, actor.name, decision]);
  const [approval] = await deps.sql.query<ApprovalRow>(`select ${APPROVAL_COLUMNS} from workflow_approvals a join workflows w on w.id = a.workflow_id where a.id = $1 and a.tenant_id = $2`, [approvalId, tenantId]);
  if (!approval) throw notFound('Approval');
  if (row.decided === 0) {
    throw new AppError('APPROVAL_DECIDED', `The approval was already decided (${approval.status})`, { approval_id: approvalId, status: approval.status, decided_at: iso(approval.decided_at) });
  }
  const [run] = await deps.sql.query<{ status: string }>('select status from workflow_runs where id = $1', [approval.run_id]);
  recordAudit(em, tenantId, actor, { action: 'workflow.approval.decide', targetType: 'workflow', targetId: approval.workflow_key, details: { approval_id: approvalId, decision, run_id: approval.run_id } });
  await em.flush();
  return { approval: toApproval(approval), run: { run_id: approval.run_id, status: (run?.status ?? 'running') as WorkflowRunStatus } };
}
