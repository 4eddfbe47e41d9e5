import type { EntityManager } from '../../db/orm.js';
import { deleteDayCountsBefore, deleteOutboxMessagesSentBefore } from '../mail/mail-records.js';
import { deleteHeartbeatsSeenBefore } from '../runs/worker-records.js';
import { IDEMPOTENCY_TTL_HOURS } from '../workflows/idempotency.js';
import { deleteExpiredEmailTokens, deleteLoginAttemptsBefore } from '../auth/user-records.js';
import { failAbandonedAgentRuns } from '../agents/agent-records.js';
import { deleteExpiredWorkflowState, deleteIdempotencyKeysBefore, deleteScheduleTicksBefore } from '../workflows/workflow-records.js';
import { deleteExpiredIntentCache } from '../intents/intent-records.js';
import { expireIdleSessions } from '../sessions/session-records.js';
import { pruneDeployments } from '../deploys/deployments.service.js';

/**
 * Deletes rows that have outlived their use and expires idle sessions; returns how many of each
 * kind changed. `sessionTtlSeconds` defaults to 24 h. History kept by each tenant's retention
 * (runs, sessions, agent conversations, usage events, audit entries) is the retention job's
 * (enforce-retention.ts).
 */
export async function pruneExpiredRows(em: EntityManager, now = new Date(), sessionTtlSeconds = 24 * 3600) {
  const day = 24 * 3600 * 1000;
  return {
    emailTokens: await deleteExpiredEmailTokens(em, now, new Date(now.getTime() - day)),
    loginAttempts: await deleteLoginAttemptsBefore(em, new Date(now.getTime() - day)),
    outboxMessages: await deleteOutboxMessagesSentBefore(em, new Date(now.getTime() - 30 * day)),
    // The daily mail quota reads only today's count (UTC); a day's margin covers clocks that differ.
    mailDayCounts: await deleteDayCountsBefore(em, new Date(now.getTime() - 2 * day).toISOString().slice(0, 10)),
    workerHeartbeats: await deleteHeartbeatsSeenBefore(em, new Date(now.getTime() - day)),
    intentCache: await deleteExpiredIntentCache(em, now),
    expiredSessions: await expireIdleSessions(em, new Date(now.getTime() - sessionTtlSeconds * 1000)),
    workflowState: await deleteExpiredWorkflowState(em, now),
    // Idempotency keys (and webhook-ids) answer repeats for 24 h; older ones are dead weight.
    idempotencyKeys: await deleteIdempotencyKeysBefore(em, new Date(now.getTime() - IDEMPOTENCY_TTL_HOURS * 3600 * 1000)),
    // A schedule tick's row guards its one run; a week is far past any late tick job.
    scheduleTicks: await deleteScheduleTicksBefore(em, new Date(now.getTime() - 7 * day)),
    // A run still "running" an hour after it started lost its process (a synchronous run never
    // takes that long): it is closed as failed rather than left open for ever.
    abandonedAgentRuns: await failAbandonedAgentRuns(em, now, new Date(now.getTime() - 3600 * 1000)),
    // The newest deployments of each tenant, for a while (deployments.service.ts).
    deployments: await pruneDeployments(em, now),
  };
}
