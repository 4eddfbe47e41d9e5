import { z } from 'zod';
import { envelope, ok } from '../common/schemas.js';
import { adminProcedure, apiKeyProcedure, dashboardProcedure, router } from '../trpc.js';
import { erasureInput, erasureReceiptSchema } from './erasure.schemas.js';
import { eraseEndUser, eraseTenantEndUser } from './erasure.service.js';

const TAGS = ['Erasure'];

const ERASURE_NOTE = `Erases one end user of the tenant (GDPR Art. 17), named by the \`user_id\` the API was called with (\`input.user_id\` of intent, agent and workflow runs). Only this tenant's rows are touched: the same user_id in another tenant is another person.

Deleted: their intent sessions and transcripts (every input and answer); cached answers derived from their inputs; their agent conversations (sessions, runs, messages) and what agents remember about them; workflow runs whose input's \`user_id\` is theirs, with approvals, idempotency keys and step traces; the runs those runs started (an agent's workflow tool, a workflow's ai_agent step), found through the step traces; saved workflow values, outbox mail and recorded events (with their deliveries) that name them; evaluation cases whose input's \`user_id\` is theirs (a curated dataset loses those cases: their input is the person's data); their runs sampled for online evaluation and not yet scored.
Anonymised: evaluation results of those inputs, live windows' included (input, output, judge reasoning and the like dropped; scores kept, so a run's statistics still add up); audit entries whose target or details name them (those values become "[erased]").
Usage events and the monthly usage totals stay: they hold no user id or text. Not found: an ai_intent step whose input mapping leaves out \`user_id\` runs the intent as \`workflow:<key>\` (map it, or leave the mapping out: the run's input is passed whole); eval cases written in a project stay in the plans of past deployments (the project is the tenant's source).

"Name them" for free-form values: the user_id anywhere inside a text when it has 6 characters or more, else only as a whole value.

The work goes in short transactions of at most 100 sessions or runs; an erasure interrupted anywhere can be run again to finish. While a run of the person is executing, the answer is 409 ERASURE_RUNS_IN_FLIGHT (try again when it ends). A user_id with nothing stored answers a receipt of zeros. The receipt holds neither the user_id nor any of their text (\`subject\` is a hash); it is also recorded in the tenant's audit log (action \`data.erase\`, target_type \`person\`, target_id the subject).`;

const ERRORS = ['ERASURE_RUNS_IN_FLIGHT'] as const;

export const erasureRouter = router({
  eraseByKey: apiKeyProcedure('data:erase')
    .meta({ openapi: { method: 'POST', path: '/v1/erasures', tags: TAGS, summary: 'Erase one end user\'s data by user_id; answers the receipt', description: ERASURE_NOTE }, errors: [...ERRORS] })
    .input(erasureInput)
    .output(ok(erasureReceiptSchema))
    .mutation(async ({ ctx, input }) => envelope(await eraseEndUser(ctx.em, ctx.tenantId, ctx.actor, input.user_id))),

  eraseFromDashboard: dashboardProcedure('admin')
    .meta({ openapi: { method: 'POST', path: '/dashboard/erasures', tags: TAGS, summary: 'Erase one end user\'s data by user_id (owner/admin); answers the receipt', description: ERASURE_NOTE }, errors: [...ERRORS] })
    .input(erasureInput)
    .output(ok(erasureReceiptSchema))
    .mutation(async ({ ctx, input }) => envelope(await eraseEndUser(ctx.em, ctx.tenantId, ctx.actor, input.user_id))),

  eraseByAdmin: adminProcedure
    .meta({
      openapi: { method: 'POST', path: '/admin/tenants/{tenantId}/erasures', tags: TAGS, summary: 'Erase one end user of a tenant by user_id (liya tenants erase-user)', description: ERASURE_NOTE },
      errors: ['NOT_FOUND', ...ERRORS],
    })
    .input(erasureInput.extend({ tenantId: z.string().max(64) }))
    .output(ok(erasureReceiptSchema))
    .mutation(async ({ ctx, input }) => envelope(await eraseTenantEndUser(ctx.em, input.tenantId, ctx.actor, input.user_id))),
});
