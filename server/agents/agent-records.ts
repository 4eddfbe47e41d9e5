// What other folders may use of agents and agent runs. Only this folder imports its store/ (no-
// foreign-store in .dependency-cruiser.cjs); other folders come here, so a store can change its
// statements, split or merge without its callers noticing.
export { failAbandonedAgentRuns } from './store/agent-runs.js';
export { findAgent, listTenantAgents } from './store/agents.js';
