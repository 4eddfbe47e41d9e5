import { z } from 'zod';
import { envelope, ok, okEmpty } from '../common/schemas.js';
import { dashboardProcedure, router } from '../trpc.js';
import { addPromptVersionInput, createPromptInput, promptSchema, promptVersionSchema } from './prompts.schemas.js';
import { addPromptVersion, createPrompt, deletePrompt, getPrompt, listPrompts } from './prompts.service.js';

const TAGS = ['Prompt library'];
const promptKey = z.object({ promptKey: z.string().max(100) });

export const promptsRouter = router({
  list: dashboardProcedure()
    .meta({ openapi: { method: 'GET', path: '/dashboard/prompts', tags: TAGS, summary: 'Named prompts of the tenant' } })
    .input(z.object({}).optional())
    .output(ok(z.object({ prompts: z.array(promptSchema) })))
    .query(async ({ ctx }) => envelope(await listPrompts(ctx.em, ctx.tenantId))),

  create: dashboardProcedure('developer')
    .meta({ openapi: { method: 'POST', path: '/dashboard/prompts', tags: TAGS, summary: 'Create a prompt with its first version' }, successStatus: 201, errors: ['PROMPT_KEY_TAKEN'] })
    .input(createPromptInput)
    .output(ok(z.object({ prompt: promptSchema, version: promptVersionSchema })))
    .mutation(async ({ ctx, input }) => envelope(await createPrompt(ctx.em, ctx.tenantId, ctx.actor, input))),

  get: dashboardProcedure()
    .meta({ openapi: { method: 'GET', path: '/dashboard/prompts/{promptKey}', tags: TAGS, summary: 'A prompt with every version' }, errors: ['NOT_FOUND'] })
    .input(promptKey)
    .output(ok(z.object({ prompt: promptSchema, versions: z.array(promptVersionSchema) })))
    .query(async ({ ctx, input }) => envelope(await getPrompt(ctx.em, ctx.tenantId, input.promptKey))),

  addVersion: dashboardProcedure('developer')
    .meta({ openapi: { method: 'POST', path: '/dashboard/prompts/{promptKey}/versions', tags: TAGS, summary: 'Add an immutable version' }, successStatus: 201, errors: ['NOT_FOUND'] })
    .input(addPromptVersionInput)
    .output(ok(z.object({ version: promptVersionSchema })))
    .mutation(async ({ ctx, input }) => envelope(await addPromptVersion(ctx.em, ctx.tenantId, ctx.actor, input.promptKey, input))),

  delete: dashboardProcedure('developer')
    .meta({ openapi: { method: 'DELETE', path: '/dashboard/prompts/{promptKey}', tags: TAGS, summary: 'Delete a prompt no intent is bound to' }, errors: ['NOT_FOUND', 'CONFLICT'] })
    .input(promptKey)
    .output(okEmpty)
    .mutation(async ({ ctx, input }) => {
      await deletePrompt(ctx.em, ctx.tenantId, ctx.actor, input.promptKey);
      return { success: true as const };
    }),
});
