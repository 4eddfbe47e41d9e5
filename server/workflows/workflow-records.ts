// What other folders may use of workflows, idempotency keys, schedule ticks and workflow state.
// Only this folder imports its store/ (no-foreign-store in .dependency-cruiser.cjs); other folders
// come here, so a store can change its statements, split or merge without its callers noticing.
export { deleteIdempotencyKeysBefore } from './store/idempotency-keys.js';
export { deleteScheduleTicksBefore } from './store/schedule-ticks.js';
export { deleteExpiredWorkflowState } from './store/workflow-state.js';
export { findWorkflowBy, findWorkflowRefs, listDeployedWorkflows } from './store/workflows.js';
