import { z } from 'zod';
import { HISTORY_LIST_NOTE, historyPageQuery, historyPaginationSchema } from '../common/pagination.js';
import { envelope, ok } from '../common/schemas.js';
import { dashboardProcedure, router } from '../trpc.js';
import { SESSION_STATUSES } from '../../db/column-values.js';
import { getSessionWithMessages, listSessions } from './sessions.service.js';

const TAGS = ['Dashboard sessions'];

export const sessionSummarySchema = z
  .object({
    sessionId: z.string(),
    userId: z.string(),
    domain: z.string(),
    intent: z.string().nullable(),
    status: z.enum(SESSION_STATUSES),
    messageCount: z.number().int(),
    tokensUsed: z.number().int(),
    costUsd: z.string().describe('USD, decimal with 6 places'),
    lastActivityAt: z.string(),
    createdAt: z.string(),
  })
  .meta({ id: 'SessionSummary' });

const messageSchema = z
  .object({
    id: z.string(),
    role: z.enum(['user', 'assistant']),
    intent: z.string().nullable(),
    content: z.unknown(),
    model: z.string().nullable(),
    tokens: z.number().int(),
    costUsd: z.string(),
    latencyMs: z.number().int(),
    cached: z.boolean(),
    createdAt: z.string(),
  })
  .meta({ id: 'SessionMessage' });

export const sessionsRouter = router({
  list: dashboardProcedure()
    .meta({
      openapi: {
        method: 'GET', path: '/dashboard/sessions', tags: TAGS, summary: 'Sessions, most recently active first',
        description: `Filters: \`status\`, \`domain\`. A session with new activity moves to the front, so a walk by cursor meanwhile may pass over it. ${HISTORY_LIST_NOTE}`,
      },
    })
    .input(z.object({ ...historyPageQuery, status: z.enum(SESSION_STATUSES).optional(), domain: z.string().max(100).optional() }))
    .output(ok(z.object({ sessions: z.array(sessionSummarySchema), pagination: historyPaginationSchema })))
    .query(async ({ ctx, input }) => envelope(await listSessions(ctx.em, ctx.tenantId, { status: input.status, domain: input.domain }, input))),

  get: dashboardProcedure()
    .meta({ openapi: { method: 'GET', path: '/dashboard/sessions/{sessionId}', tags: TAGS, summary: 'One session with every message' }, errors: ['NOT_FOUND'] })
    .input(z.object({ sessionId: z.string().max(64) }))
    .output(ok(z.object({ session: sessionSummarySchema, messages: z.array(messageSchema) })))
    .query(async ({ ctx, input }) => envelope(await getSessionWithMessages(ctx.em, ctx.tenantId, input.sessionId))),
});
