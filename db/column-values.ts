// The values an enumerated column may hold: shared by the entities (the column's check) and by the
// wire schemas and services (what a response may say), without importing the ORM.
export const AGENT_STATUSES = ['draft', 'active', 'inactive', 'error'] as const;
export const AGENT_RUN_STATUSES = [
  'running', 'completed', 'failed', 'max_steps_reached', 'budget_exhausted', 'guardrail_blocked', 'needs_input', 'cancelled',
] as const;
export type AgentRunStatus = (typeof AGENT_RUN_STATUSES)[number];
export const INGESTION_STATUSES = ['pending', 'running', 'completed', 'failed', 'cancelled'] as const;
export const EVAL_RUN_STATUSES = ['pending', 'running', 'completed', 'failed', 'cancelled'] as const;
export const EVAL_RESULT_STATUSES = ['pending', 'scored', 'errored', 'skipped'] as const;
export const EVAL_VERDICTS = ['agree', 'override', 'flag'] as const;
export const SESSION_STATUSES = ['active', 'completed', 'expired', 'error'] as const;
export const TENANT_TYPES = ['internal', 'partner', 'enterprise', 'trial'] as const;
export const BILLING_PLANS = ['free', 'trial', 'starter', 'pro', 'enterprise'] as const;
export const ROLES = ['owner', 'admin', 'developer', 'viewer'] as const;
export type Role = (typeof ROLES)[number];
export const EMAIL_TOKEN_KINDS = ['verify_email', 'password_reset'] as const;
export const WORKFLOW_STATUSES = ['draft', 'active', 'inactive', 'error'] as const;
export const WORKFLOW_RUN_STATUSES = ['running', 'completed', 'needs_input', 'awaiting_approval', 'waiting', 'rejected', 'cancelled', 'failed'] as const;
export type WorkflowRunStatus = (typeof WORKFLOW_RUN_STATUSES)[number];
export const APPROVAL_STATUSES = ['pending', 'approved', 'rejected', 'timed_out', 'cancelled'] as const;
