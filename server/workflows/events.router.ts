import { z } from 'zod';
import { envelope, ok } from '../common/schemas.js';
import { apiKeyProcedure, router } from '../trpc.js';
import { readIdempotencyKey } from './idempotency.js';
import { publishEvent } from './triggers.service.js';
import { eventInput } from './workflows.schemas.js';

export const eventsRouter = router({
  publish: apiKeyProcedure('workflows:run')
    .meta({
      openapi: {
        method: 'POST', path: '/v1/events', tags: ['Workflows'], summary: 'Publish an event: every active workflow triggered by it starts a run (queued)',
        description: 'Answers 202 with the ids of the runs started; a workflow at its max_concurrent_runs is skipped and listed in skipped (reason CONCURRENCY_LIMIT), as is one that could not be started after others were (reason INTERNAL_ERROR; when none could start, the request fails as a whole). ' +
          'Idempotency-Key: a repeat answers the first result with idempotent_replay true; another body 422 IDEMPOTENCY_KEY_REUSED.',
      },
      successStatus: 202,
      errors: ['IDEMPOTENCY_KEY_REUSED', 'IDEMPOTENCY_IN_PROGRESS', 'PAYLOAD_TOO_LARGE', 'UNSUPPORTED_ATTACHMENT', 'ATTACHMENT_UNREADABLE'],
    })
    .input(eventInput)
    .output(ok(z.object({ runs: z.array(z.string()), skipped: z.array(z.object({ workflow_key: z.string(), reason: z.string() })), idempotent_replay: z.boolean().optional() })))
    .mutation(async ({ ctx, input }) => envelope(await publishEvent(ctx.em, ctx.deps, ctx.scope, input, readIdempotencyKey(ctx.req.headers)))),
});
