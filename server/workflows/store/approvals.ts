// Reads of the workflow_approvals table. An approval only changes together with its run's wait (in
// the same statement), so store/workflow-runs.ts writes it.
import type { SqlPool } from '../../../db/sql-pool.js';

export interface ApprovalRow {
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

/** An approval with its workflow's key (raw: on the SqlPool, right after the decision's statement). */
export async function findApproval(sql: SqlPool, tenantId: string, approvalId: string): Promise<ApprovalRow | null> {
  const [approval] = await sql.query<ApprovalRow>(`select ${APPROVAL_COLUMNS} from workflow_approvals a join workflows w on w.id = a.workflow_id where a.id = $1 and a.tenant_id = $2`, [approvalId, tenantId]);
  return approval ?? null;
}
