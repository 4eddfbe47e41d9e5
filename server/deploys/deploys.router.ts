import { z } from 'zod';
import { envelope, ok } from '../common/schemas.js';
import { apiKeyProcedure, router } from '../trpc.js';
import { createDeploymentInput, deploymentId, deploymentSchema, planInput, planSchema, publishInput } from './deploys.schemas.js';
import { createDeployment, exportTenantProject, getDeployment, planTenantProject, publishDeployment } from './deployments.service.js';

const TAGS = ['Deploys as code'];
// The request schema holds transforms a response schema may not; the shape is the same.
const exportedProject = z.record(z.string(), z.unknown()).describe('The project document: the shape of `project` in POST /v1/project/plan, every field present');
/** A project carries whole datasets and prompts: more than the default body limit. */
const PROJECT_BODY_LIMIT = 25 * 1024 * 1024;

const DEPLOY_DESCRIPTION = `A deployment is the draft of every resource it changes. Created without a gate it is published at once: every change of the plan in one transaction (a refused change rolls all of them back; nothing of the deployment is live). With \`gate\`, the named eval suites first run against the new definitions (draft custom intents; intents the project does not define run as they are live) as eval runs you can follow; nothing is live meanwhile. \`POST /v1/deployments/{id}/publish\` then publishes, only if every suite passed (its run completed with no errored case and at least \`min_pass_rate\` of its cases passed) and the server still matches the plan (else 409 DEPLOYMENT_STALE: plan again). Eval datasets and suites of the project are resources like the others: published with the rest. Secret values (MCP headers, scorer webhook secrets) are compared on the server, shown as "(secret)" in plans and never stored with a deployment; \`\${ENV_NAME}\` keeps the stored value.`;

export const deploysRouter = router({
  exportProject: apiKeyProcedure
    .meta({
      openapi: {
        method: 'GET', path: '/v1/project', tags: TAGS, summary: 'The tenant\'s resources as a project document',
        description: 'Custom domains and intents, prompts (every version), collections (metadata and domain attachments, not documents), the tenant guardrails, deployed workflows (live steps, stable step ids), agents, eval datasets and suites. Matched by key, ids turned into keys; every field present; lists sorted by key, so two exports of the same state are identical. Secrets appear as `${ENV_NAME}` references, never as values.',
      },
    })
    .input(z.object({}).optional())
    .output(ok(z.object({ project: exportedProject })))
    .query(async ({ ctx }) => envelope(await exportTenantProject(ctx.em, ctx.tenantId))),

  plan: apiKeyProcedure
    .meta({
      openapi: {
        method: 'POST', path: '/v1/project/plan', tags: TAGS, summary: 'What deploying a project would change',
        description: 'Per resource: create, update (with a field-level diff) or, with prune, delete; nothing is changed. A project names everything it manages: resources of the server it does not name are listed as untracked (deleted only with prune; agents are switched off, never removed). Guardrails absent from the project are left alone. 400 INVALID_INPUT names a duplicate key or a rewritten prompt version (versions are immutable: add new ones at the end).',
      },
      bodyLimit: PROJECT_BODY_LIMIT,
    })
    .input(planInput)
    .output(ok(z.object({ plan: planSchema })))
    .mutation(async ({ ctx, input }) => envelope(await planTenantProject(ctx.em, ctx.deps, ctx.tenantId, input.project, input.prune ?? false))),

  createDeployment: apiKeyProcedure
    .meta({
      openapi: { method: 'POST', path: '/v1/deployments', tags: TAGS, summary: 'Deploy a project (with an optional evaluation gate)', description: DEPLOY_DESCRIPTION },
      successStatus: 201,
      bodyLimit: PROJECT_BODY_LIMIT,
      errors: ['EVALS_BUDGET_EXCEEDED', 'RATE_LIMITED', 'FEATURE_NOT_ENABLED'],
    })
    .input(createDeploymentInput)
    .output(ok(z.object({ deployment: deploymentSchema })))
    .mutation(async ({ ctx, input }) => envelope(await createDeployment(ctx.em, ctx.deps, ctx.scope, ctx.actor, input))),

  getDeployment: apiKeyProcedure
    .meta({ openapi: { method: 'GET', path: '/v1/deployments/{id}', tags: TAGS, summary: 'A deployment, with its gate\'s progress' }, errors: ['NOT_FOUND'] })
    .input(deploymentId)
    .output(ok(z.object({ deployment: deploymentSchema })))
    .query(async ({ ctx, input }) => envelope(await getDeployment(ctx.em, ctx.deps, ctx.tenantId, input.id))),

  publishDeployment: apiKeyProcedure
    .meta({
      openapi: { method: 'POST', path: '/v1/deployments/{id}/publish', tags: TAGS, summary: 'Publish a gated deployment once its gate passed', description: DEPLOY_DESCRIPTION },
      bodyLimit: PROJECT_BODY_LIMIT,
      errors: ['NOT_FOUND', 'GATE_PENDING', 'GATE_FAILED', 'DEPLOYMENT_STALE', 'CONFLICT'],
    })
    .input(publishInput)
    .output(ok(z.object({ deployment: deploymentSchema })))
    .mutation(async ({ ctx, input }) => envelope(await publishDeployment(ctx.em, ctx.deps, ctx.scope, ctx.actor, input.id, input.project))),
});
