// Reads of the workflow_approvals table. An approval only changes together with its run's wait (in
// the same statement), so the run statements write it (run-step-writes.ts creates it, run-waits.ts
// decides or cancels it, run-erasure.ts deletes it).
import type { SqlPool } from '../../../db/sql-pool.js';
import { build, runBuilt } from '../../../db/statements.js';

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

const approvalOf = (tenantId: string, approvalId: string) =>
  build
    .selectFrom('workflow_approvals as a')
    .innerJoin('workflows as w', 'w.id', 'a.workflow_id')
    .select([
      'a.id', 'a.run_id', 'a.workflow_id', 'w.workflow_key', 'a.step_id', 'a.loop_index', 'a.status', 'a.message', 'a.comment', 'a.decided_by', 'a.decided_at',
      'a.expires_at', 'a.created_at',
    ])
    .where('a.id', '=', approvalId)
    .where('a.tenant_id', '=', tenantId);

/** An approval with its workflow's key (on the SqlPool, right after the decision's statement). */
export async function findApproval(sql: SqlPool, tenantId: string, approvalId: string): Promise<ApprovalRow | null> {
  const [approval] = await runBuilt(sql, approvalOf(tenantId, approvalId));
  return (approval as ApprovalRow | undefined) ?? null;
}
