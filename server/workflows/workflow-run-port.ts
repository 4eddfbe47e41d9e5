// The workflows' side of the run ports: an agent's workflow tool runs a workflow through this.
import type { AppDeps } from '../deps.js';
import type { WorkflowRunPort } from '../runs/run-ports.js';
import { startRun } from './workflow-runs.service.js';
import { findWorkflow } from './workflows.service.js';

export function createWorkflowRunPort(deps: AppDeps): WorkflowRunPort {
  return {
    async findRunnable(em, tenantId, ref) {
      const workflow = await findWorkflow(em, tenantId, ref, true);
      if (!workflow.isActive) throw new Error('the workflow is switched off');
      return { key: workflow.workflowKey, name: workflow.name, description: workflow.description ?? null };
    },
    async runNested(em, scope, key, input, lineage) {
      const outcome = await startRun(em, deps, scope, key, { input }, { mode: 'live', triggeredBy: 'agent', lineage });
      if (outcome.kind !== 'result') throw new Error('the workflow run did not start synchronously');
      const { run_id, status, output } = outcome.result;
      return { run_id, status, output };
    },
  };
}
