// The workflow_versions table (a workflow's immutable deployed definitions); this module alone writes it.
import { WorkflowVersion, type IWorkflow } from '../../../db/entities/workflow.js';
import type { EntityManager } from '../../../db/orm.js';
import type { SqlPool } from '../../../db/sql-pool.js';
import { build, statement } from '../../../db/statements.js';

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

const VERSION_STEPS = statement<{ tenantId: string; workflowId: string; version: number }>()('liya_workflow_version_steps', (p) =>
  build.selectFrom('workflow_versions').select('steps').where('workflow_id', '=', p.workflowId).where('version', '=', p.version).where('tenant_id', '=', p.tenantId),
);

/** The steps of one version; undefined when there is no such version (a hot statement on the SqlPool). */
export async function findVersionSteps<S>(sql: SqlPool, tenantId: string, workflowId: string, version: number): Promise<{ steps: S[] } | undefined> {
  const [row] = await VERSION_STEPS.run(sql, { tenantId, workflowId, version });
  return row as { steps: S[] } | undefined;
}
