// Deciding an approval: the approval and the run's switch back to running (with the decision stored
// as how the step goes on) change in one statement, and a job continues the run. A second decision
// finds the approval decided.
import type { EntityManager } from '../../db/orm.js';
import type { Actor } from '../actor.js';
import { recordAudit } from '../audit/audit.service.js';
import { iso, isoRequired, isUuid } from '../common/schemas.js';
import type { AppDeps } from '../deps.js';
import { AppError, notFound } from '../errors.js';
import { findApproval, type ApprovalRow } from './store/approvals.js';
import type { WorkflowRunStatus } from '../../db/column-values.js';
import { findRunStatusById } from './store/run-reads.js';
import { saveApprovalDecision } from './store/run-waits.js';

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

export async function decideApproval(em: EntityManager, deps: AppDeps, tenantId: string, actor: Actor, approvalId: string, decision: 'approve' | 'reject', comment: string | null) {
  if (!isUuid(approvalId)) throw notFound('Approval');
  const status = decision === 'approve' ? 'approved' : 'rejected';
  const row = await saveApprovalDecision(deps.sql, { approvalId, tenantId, status, comment, decidedBy: actor.name, decision });
  const approval = await findApproval(deps.sql, tenantId, approvalId);
  if (!approval) throw notFound('Approval');
  if (row.decided === 0) {
    throw new AppError('APPROVAL_DECIDED', `The approval was already decided (${approval.status})`, { approval_id: approvalId, status: approval.status, decided_at: iso(approval.decided_at) });
  }
  const run = await findRunStatusById(deps.sql, approval.run_id);
  await em.transactional((tx) =>
    recordAudit(tx, tenantId, actor, { action: 'workflow.approval.decide', targetType: 'workflow', targetId: approval.workflow_key, details: { approval_id: approvalId, decision, run_id: approval.run_id } }),
  );
  return { approval: toApproval(approval), run: { run_id: approval.run_id, status: (run?.status ?? 'running') as WorkflowRunStatus } };
}
