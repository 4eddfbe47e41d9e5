import type { Task } from 'graphile-worker';
import type { AppDeps } from '../../server/deps.js';
import { deliverOutboxMessage } from '../../server/mail/outbox.js';

export const sendMailTask = (deps: AppDeps): Task => async (payload) => {
  const { messageId } = payload as { messageId?: unknown };
  if (typeof messageId !== 'string') return; // malformed payloads are dropped, not retried
  await deliverOutboxMessage(deps.orm.em.fork(), deps, messageId);
};
