import { defineEntity, p } from '@mikro-orm/core';

/** Liveness of job runners, so a starting runner can release the job locks of dead ones. */
export const WorkerHeartbeat = defineEntity({
  name: 'WorkerHeartbeat',
  tableName: 'worker_heartbeats',
  properties: {
    workerId: p.string().length(128).primary(),
    startedAt: p.datetime(),
    lastSeenAt: p.datetime().index(),
  },
});
