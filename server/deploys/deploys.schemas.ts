// Wire shapes of deploys as code: export, plan, and deployments (an optional evaluation gate, then
// one publish step).
import { z } from 'zod';
import { bodyBoolean, bodyNumber, noCoerce } from '../common/schemas.js';
import { projectSchema, RESOURCE_KINDS } from './project.schemas.js';

export const DEPLOYMENT_STATUSES = ['unchanged', 'gating', 'publishing', 'gate_failed', 'deployed', 'failed'] as const;

export const fieldChangeSchema = z
  .object({
    path: z.string().describe('Dotted path of the field inside the resource, e.g. `steps.2.config.expression`'),
    change: z.enum(['added', 'removed', 'changed']),
    before: z.unknown().optional().describe('Absent for an added field; at a secret path, a reference or a masked URL (never a value)'),
    after: z.unknown().optional().describe('Absent for a removed field; at a secret path, a reference or a masked URL (never a value)'),
  })
  .meta({ id: 'ProjectFieldChange' });
export type FieldChange = z.infer<typeof fieldChangeSchema>;

export const resourceChangeSchema = z
  .object({
    kind: z.enum(RESOURCE_KINDS),
    key: z.string().describe('The resource key (`domain/intent_key` for an intent)'),
    action: z.enum(['create', 'update', 'delete']),
    fields: z.array(fieldChangeSchema).describe('Field-level diff (for create: every field set; for delete: empty)'),
  })
  .meta({ id: 'ProjectResourceChange' });
export type ResourceChange = z.infer<typeof resourceChangeSchema>;

export const planSecretSchema = z
  .object({
    kind: z.enum(RESOURCE_KINDS),
    key: z.string(),
    path: z.string().describe('Where in the resource, e.g. `steps.2.config.headers.Authorization`'),
  })
  .meta({ id: 'ProjectPlanSecret' });
export type PlanSecret = z.infer<typeof planSecretSchema>;

export const planSchema = z
  .object({
    changes: z.array(resourceChangeSchema).describe('In apply order; deletes (with prune) last'),
    summary: z.object({ create: z.number().int(), update: z.number().int(), delete: z.number().int(), unchanged: z.number().int() }),
    untracked: z.array(z.object({ kind: z.enum(RESOURCE_KINDS), key: z.string() })).describe('Resources of the server the project does not name (deleted only with prune)'),
    secrets: z
      .array(planSecretSchema)
      .describe('Secret values the project gives (not references): the apply writes each one that differs from the stored value. A plan never compares them, so it cannot tell whether one is right'),
    digest: z.string().describe('sha256 of the changes: give it as plan_digest to deploy exactly this plan'),
  })
  .meta({ id: 'ProjectPlan' });
export type Plan = z.infer<typeof planSchema>;

const projectField = noCoerce(projectSchema).describe('The project document (what `liya plan` / `liya apply` send); secrets as values or `${ENV_NAME}` (keep the stored value)');

export const planInput = z
  .object({
    project: projectField,
    prune: bodyBoolean().optional().describe('Also plan deleting what the project does not name (default false)'),
  })
  .meta({ id: 'ProjectPlanRequest' });

export const gateResultSchema = z
  .object({
    suite: z.string().describe('The suite name'),
    run_id: z.string(),
    model: z.string().nullable().describe('With gate_models "chain": the one model of the intent\'s chain this run called (primary or a fallback); null: the intent\'s own route'),
    status: z.string().describe('The eval run status: pending, running, completed, failed, cancelled'),
    progress: z.number().int(),
    cases_total: z.number().int(),
    cases_passed: z.number().int(),
    cases_errored: z.number().int(),
    pass_rate: z.number().nullable(),
    mean_score: z.number().nullable(),
    passed: z.boolean().nullable().describe('null until the run has ended'),
  })
  .meta({ id: 'DeploymentGateResult' });
export type GateResult = z.infer<typeof gateResultSchema>;

export const deploymentSchema = z
  .object({
    id: z.string().nullable().describe('null for a deployment that changes nothing (status unchanged): it is not stored'),
    status: z.enum(DEPLOYMENT_STATUSES).describe('unchanged: nothing to do (not stored); gating: the gate suites are running, or a publish is applying it; publishing: only on deployments from an earlier release, whose publish was cut off (publishing again continues it); gate_failed: a suite missed its thresholds (nothing was published); deployed; failed: the publish was refused (nothing was published)'),
    progress: z.number().int().describe('0-100'),
    stage: z.string().nullable(),
    prune: z.boolean(),
    min_pass_rate: z.number(),
    plan: planSchema,
    gate: z.array(gateResultSchema),
    error: z.object({ code: z.string(), message: z.string() }).nullable(),
    minted: z
      .array(z.object({ workflow_key: z.string(), webhook_url: z.string() }))
      .describe('Webhook workflows deployed for the first time: their URL (their secret is never shown here; rotate it to read one)'),
    created_by: z.string().nullable().describe('The key that made it, as the audit log names it'),
    created_at: z.string(),
    published_at: z.string().nullable(),
  })
  .meta({ id: 'Deployment' });
export type DeploymentDto = z.infer<typeof deploymentSchema>;

export const createDeploymentInput = z
  .object({
    project: projectField,
    prune: bodyBoolean().optional().describe('Also delete what the project does not name (default false)'),
    gate: z
      .array(z.string().trim().min(1).max(200))
      .max(20)
      .optional()
      .describe('Eval suites (by name, from the project or the server) that must pass against the new definitions before anything goes live'),
    min_pass_rate: bodyNumber(0, 1).optional().describe('Share of a gate suite\'s cases that must pass (default 1: every case); a suite with an errored case fails'),
    gate_models: z
      .enum(['primary', 'chain'])
      .optional()
      .describe('primary (default): each gate suite runs once, as the intent\'s route serves it; chain: once per model of the gated intent\'s chain (its model, then each fallback: the intent\'s execution_config.fallback_models, else the tenant\'s, else the platform\'s), each model alone, and every one must pass, so a fallback is evaluated before it serves traffic'),
    plan_digest: z
      .string()
      .regex(/^[0-9a-f]{64}$/, 'a plan digest: 64 hex characters')
      .optional()
      .describe('The digest of the plan that was reviewed (POST /v1/project/plan): when the plan differs now (the server changed since), 409 DEPLOYMENT_STALE and nothing is done'),
  })
  .meta({ id: 'CreateDeploymentRequest' });

export const deploymentId = z.object({ id: z.string().max(64) });

export const publishInput = deploymentId
  .extend({ project: projectField.describe('The same project document the deployment was created with (its secret values are never stored, so the publish brings them again)') })
  .meta({ id: 'PublishDeploymentRequest' });

const environmentNames = z.array(z.string().trim().min(1).max(64).regex(/^[a-z0-9_-]+$/, 'an environment name')).max(50);

export const deployPolicySchema = z
  .object({
    deploy_environments: z.array(z.string()).describe('Environments whose keys (with project:deploy) may deploy and publish'),
    prune_environments: z.array(z.string()).describe('Environments whose keys (with project:prune) may deploy with prune'),
    required_gates: z.array(z.string()).describe('Eval suites (by name) every deployment that changes something must pass, whatever its request says'),
    min_pass_rate: z.number().nullable().describe('The least min_pass_rate of every gate (a request asking less gets this); null: the request\'s (default 1)'),
    updated_by: z.string().nullable(),
    updated_at: z.string().nullable(),
  })
  .meta({ id: 'DeployPolicy' });
export type DeployPolicyDto = z.infer<typeof deployPolicySchema>;

export const deployPolicyInput = z
  .object({
    deploy_environments: environmentNames.optional(),
    prune_environments: environmentNames.optional(),
    required_gates: z.array(z.string().trim().min(1).max(200)).max(20).optional(),
    min_pass_rate: bodyNumber(0, 1).nullable().optional(),
  })
  .meta({ id: 'DeployPolicyUpdate' });
export type DeployPolicyInput = z.infer<typeof deployPolicyInput>;

export const deploymentSummarySchema = z
  .object({
    id: z.string(),
    status: z.enum(DEPLOYMENT_STATUSES),
    summary: planSchema.shape.summary,
    secrets: z.number().int().describe('How many secret values the deployment gave'),
    prune: z.boolean(),
    gate: z.array(z.object({ suite: z.string(), run_id: z.string(), model: z.string().nullable().optional() })),
    error: z.object({ code: z.string(), message: z.string() }).nullable(),
    created_by: z.string().nullable(),
    created_at: z.string(),
    published_at: z.string().nullable(),
  })
  .meta({ id: 'DeploymentSummary' });
export type DeploymentSummaryDto = z.infer<typeof deploymentSummarySchema>;
