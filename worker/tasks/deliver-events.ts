import type { Task } from 'graphile-worker';
import type { AppDeps } from '../../server/deps.js';
import { deliverEventsJob } from '../../server/jobs/contracts.js';
import { deliverEvents } from '../../server/events/deliver-events.js';

export const deliverEventsTask = (deps: AppDeps): Task => async (raw) => {
  const parsed = deliverEventsJob.payload.safeParse(raw);
  if (!parsed.success) return; // malformed payloads are dropped, not retried
  await deliverEvents(deps, parsed.data);
};
