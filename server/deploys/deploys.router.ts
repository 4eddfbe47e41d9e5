import { z } from 'zod';
import { HISTORY_LIST_NOTE, historyPageQuery, historyPaginationSchema } from '../common/pagination.js';
import { envelope, ok } from '../common/schemas.js';
import { apiKeyProcedure, dashboardProcedure, router } from '../trpc.js';
import { DEFAULT_DEPLOY_POLICY, getDeployPolicy, updateDeployPolicy } from './deploy-policy.js';
import {
  createDeploymentInput, deploymentId, deploymentSchema, deploymentSummarySchema, deployPolicyInput, deployPolicySchema, planInput, planSchema, publishInput,
} from './deploys.schemas.js';
import {
  admitProjectRequest, createDeployment, DEPLOYMENT_RETENTION_DAYS, DEPLOYMENTS_KEPT, exportTenantProject, getDeployment, listDeployments, planTenantProject, publishDeployment,
} from './deployments.service.js';
import { SECRET_PATHS } from './secret-paths.js';

const TAGS = ['Deploys as code'];
// The request schema holds transforms a response schema may not; the shape is the same.
const exportedProject = z.record(z.string(), z.unknown()).describe('The project document: the shape of `project` in POST /v1/project/plan, every field present');
/** A project carries whole datasets and prompts: more than the default body limit. */
const PROJECT_BODY_LIMIT = 25 * 1024 * 1024;

const SECRETS_DESCRIPTION = `Secrets live only at these paths: ${SECRET_PATHS.map((p) => `${p.kind} \`${p.path}\` (${p.holds})`).join('; ')}. There they are stored encrypted, exported as \`\${ENV_NAME}\` references (a credential URL masked, \`***\` for each credential), and a reference keeps the stored value. A \`\${NAME}\` anywhere else is refused (400 INVALID_INPUT, issue code \`misplaced_secret_reference\`). A plan never compares a secret value given with the stored one (that would confirm a guess): it lists where values are given (\`plan.secrets\`), and the apply writes each one that differs.`;

const BOUNDS_DESCRIPTION = `Each tenant deploys one at a time: a plan-and-apply or a publish holds the tenant's deploy lock (409 DEPLOYMENT_IN_PROGRESS, retryable, while another holds it); a process that dies mid-publish leaves nothing applied, and the next publish goes on. Each server process works on DEPLOY_CONCURRENCY plans, deployments and publishes at once (default 2, each holding one database connection), with 16 waiting (then 429 CONCURRENCY_LIMIT); a tenant has at most 2 of them in progress and 60 a minute on one process (429 RATE_LIMITED). These are admitted before the body is read. A deployment that changes nothing (no change, no secret value) is answered with \`id: null\` and not stored; the newest ${DEPLOYMENTS_KEPT} deployments of a tenant are kept, none longer than ${DEPLOYMENT_RETENTION_DAYS} days; a deployment never stores the project.`;

const DEPLOY_DESCRIPTION = `A deployment is the draft of every resource it changes. Created without a gate it is published at once: every change of the plan in one transaction (a refused change rolls all of them back; nothing of the deployment is live). With \`gate\`, the named eval suites first run against the new definitions (draft custom intents; intents the project does not define run as they are live) as eval runs you can follow; nothing is live meanwhile. \`POST /v1/deployments/{id}/publish\` then publishes, only if every suite passed (its run completed with no errored case and at least \`min_pass_rate\` of its cases passed) and the server still matches the plan (else 409 DEPLOYMENT_STALE: plan again). Eval datasets and suites of the project are resources like the others: published with the rest.

The tenant's deploy policy (GET /v1/deploy-policy; set by owners and admins at PATCH /dashboard/deploy-policy) decides who may deploy: the key needs project:deploy (and project:prune with \`prune\`) and must belong to an environment the policy allows (default: production), else 403 DEPLOY_NOT_ALLOWED. Its required gates are added to every deployment's \`gate\` (a deployment that changes no resource and only writes secret values runs no gate) and its min_pass_rate is a floor. A suite the server has gates as it is live (rubric, scorer, its cases plus those the project adds, the stricter pass_threshold), so a project cannot weaken its own gate.

${SECRETS_DESCRIPTION}

${BOUNDS_DESCRIPTION}`;

export const deploysRouter = router({
  exportProject: apiKeyProcedure('project:read')
    .meta({
      openapi: {
        method: 'GET', path: '/v1/project', tags: TAGS, summary: 'The tenant\'s resources as a project document',
        description: 'Custom domains and intents, prompts (every version), collections (metadata and domain attachments, not documents), the tenant guardrails, deployed workflows (live steps, stable step ids), agents, eval datasets and suites. Matched by key, ids turned into keys; every field present; lists sorted by key, so two exports of the same state are identical. Secrets appear as `${ENV_NAME}` references (a credential URL masked), never as values.',
      },
    })
    .input(z.object({}).optional())
    .output(ok(z.object({ project: exportedProject })))
    .query(async ({ ctx }) => envelope(await exportTenantProject(ctx.em, ctx.tenantId))),

  plan: apiKeyProcedure('project:read')
    .meta({
      openapi: {
        method: 'POST', path: '/v1/project/plan', tags: TAGS, summary: 'What deploying a project would change',
        description: `Per resource: create, update (with a field-level diff) or, with prune, delete; nothing is changed. A project names everything it manages: resources of the server it does not name are listed as untracked (deleted only with prune; agents are switched off, never removed). Guardrails absent from the project are left alone. 400 INVALID_INPUT names a duplicate key or a rewritten prompt version (versions are immutable: add new ones at the end).\n\n${SECRETS_DESCRIPTION}\n\n${BOUNDS_DESCRIPTION}`,
      },
      bodyLimit: PROJECT_BODY_LIMIT,
      admission: admitProjectRequest,
      errors: ['RATE_LIMITED', 'CONCURRENCY_LIMIT'],
    })
    .input(planInput)
    .output(ok(z.object({ plan: planSchema })))
    .mutation(async ({ ctx, input }) => envelope(await planTenantProject(ctx.em, ctx.deps, ctx.tenantId, input.project, input.prune ?? false))),

  createDeployment: apiKeyProcedure('project:deploy')
    .meta({
      openapi: { method: 'POST', path: '/v1/deployments', tags: TAGS, summary: 'Deploy a project (with an optional evaluation gate)', description: DEPLOY_DESCRIPTION },
      successStatus: 201,
      bodyLimit: PROJECT_BODY_LIMIT,
      admission: admitProjectRequest,
      errors: ['EVALS_BUDGET_EXCEEDED', 'RATE_LIMITED', 'CONCURRENCY_LIMIT', 'FEATURE_NOT_ENABLED', 'DEPLOY_NOT_ALLOWED', 'DEPLOYMENT_IN_PROGRESS', 'DEPLOYMENT_STALE'],
    })
    .input(createDeploymentInput)
    .output(ok(z.object({ deployment: deploymentSchema })))
    .mutation(async ({ ctx, input }) => envelope(await createDeployment(ctx.em, ctx.deps, ctx.apiKey, ctx.scope, ctx.actor, input))),

  listDeployments: apiKeyProcedure('project:read')
    .meta({ openapi: { method: 'GET', path: '/v1/deployments', tags: TAGS, summary: 'The tenant\'s deployments, newest first (those kept: the newest 100, at most 90 days)', description: HISTORY_LIST_NOTE } })
    .input(z.object(historyPageQuery))
    .output(ok(z.object({ deployments: z.array(deploymentSummarySchema), pagination: historyPaginationSchema })))
    .query(async ({ ctx, input }) => envelope(await listDeployments(ctx.em, ctx.tenantId, input))),

  getDeployment: apiKeyProcedure('project:read')
    .meta({ openapi: { method: 'GET', path: '/v1/deployments/{id}', tags: TAGS, summary: 'A deployment, with its gate\'s progress' }, errors: ['NOT_FOUND'] })
    .input(deploymentId)
    .output(ok(z.object({ deployment: deploymentSchema })))
    .query(async ({ ctx, input }) => envelope(await getDeployment(ctx.em, ctx.deps, ctx.tenantId, input.id))),

  publishDeployment: apiKeyProcedure('project:deploy')
    .meta({
      openapi: { method: 'POST', path: '/v1/deployments/{id}/publish', tags: TAGS, summary: 'Publish a gated deployment once its gate passed', description: DEPLOY_DESCRIPTION },
      bodyLimit: PROJECT_BODY_LIMIT,
      admission: admitProjectRequest,
      errors: ['NOT_FOUND', 'GATE_PENDING', 'GATE_FAILED', 'DEPLOYMENT_STALE', 'CONFLICT', 'DEPLOY_NOT_ALLOWED', 'DEPLOYMENT_IN_PROGRESS', 'RATE_LIMITED', 'CONCURRENCY_LIMIT'],
    })
    .input(publishInput)
    .output(ok(z.object({ deployment: deploymentSchema })))
    .mutation(async ({ ctx, input }) => envelope(await publishDeployment(ctx.em, ctx.deps, ctx.apiKey, ctx.scope, ctx.actor, input.id, input.project))),

  getPolicy: apiKeyProcedure('project:read')
    .meta({ openapi: { method: 'GET', path: '/v1/deploy-policy', tags: TAGS, summary: 'The tenant\'s deploy policy (set by owners and admins in the dashboard)' } })
    .input(z.object({}).optional())
    .output(ok(z.object({ policy: deployPolicySchema })))
    .query(async ({ ctx }) => envelope({ policy: await getDeployPolicy(ctx.em, ctx.tenantId) })),

  getDashboardPolicy: dashboardProcedure()
    .meta({ openapi: { method: 'GET', path: '/dashboard/deploy-policy', tags: ['Dashboard deploy policy'], summary: 'The tenant\'s deploy policy' } })
    .input(z.object({}).optional())
    .output(ok(z.object({ policy: deployPolicySchema })))
    .query(async ({ ctx }) => envelope({ policy: await getDeployPolicy(ctx.em, ctx.tenantId) })),

  updatePolicy: dashboardProcedure('admin')
    .meta({
      openapi: {
        method: 'PATCH', path: '/dashboard/deploy-policy', tags: ['Dashboard deploy policy'], summary: 'Change the deploy policy (owner/admin); fields left out keep their value',
        description: `Defaults: deploy_environments ${JSON.stringify(DEFAULT_DEPLOY_POLICY.deploy_environments)}, prune_environments ${JSON.stringify(DEFAULT_DEPLOY_POLICY.prune_environments)}, no required gates, min_pass_rate null (each deployment's own, default 1). Audited with the policy before and after.`,
      },
    })
    .input(deployPolicyInput)
    .output(ok(z.object({ policy: deployPolicySchema })))
    .mutation(async ({ ctx, input }) => envelope(await updateDeployPolicy(ctx.em, ctx.tenantId, ctx.actor, input))),
});
