import type { Task } from 'graphile-worker';
import type { AppDeps } from '../../server/deps.js';
import { sendMailJob } from '../../server/jobs/contracts.js';
import { deliverOutboxMessage } from '../../server/mail/outbox.js';

export const sendMailTask = (deps: AppDeps): Task => async (raw) => {
  const parsed = sendMailJob.payload.safeParse(raw);
  if (!parsed.success) return; // malformed payloads are dropped, not retried
  await deliverOutboxMessage(deps.orm.em.fork(), deps, parsed.data.messageId);
};
