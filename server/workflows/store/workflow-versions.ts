// The workflow_versions table (a workflow's immutable deployed definitions); this module alone writes it.
import { WorkflowVersion, type IWorkflow } from '../../../db/entities/workflow.js';
import type { EntityManager } from '../../../db/orm.js';
import type { SqlPool } from '../../../db/sql-pool.js';

/** A new version of `workflow`, written by the next flush of `em`. */
export function newWorkflowVersion(
  em: EntityManager,
  values: { tenant: string; workflow: IWorkflow; version: number; name: string; description: string | null; steps: unknown[]; createdBy: string },
) {
  return em.create(WorkflowVersion, values);
}

/** The workflow's versions, newest first. */
export async function findWorkflowVersions(em: EntityManager, tenantId: string, workflow: IWorkflow) {
  return em.find(WorkflowVersion, { tenant: tenantId, workflow }, { orderBy: { version: 'desc' } });
}

/** The steps of one version; undefined when there is no such version. */
export async function findVersionSteps<S>(sql: SqlPool, tenantId: string, workflowId: string, version: number): Promise<{ steps: S[] } | undefined> {
  // Raw: a hot statement, run on the SqlPool as a named prepared statement.
  const [row] = await sql.query<{ steps: S[] }>(
    'select steps from workflow_versions where workflow_id = $1 and version = $2 and tenant_id = $3',
    [workflowId, version, tenantId],
    'liya_workflow_version_steps',
  );
  return row;
}
