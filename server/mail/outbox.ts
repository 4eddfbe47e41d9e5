import type { EntityManager } from '../../db/orm.js';
import type { AppDeps } from '../deps.js';
import { sendMailJob } from '../jobs/contracts.js';
import { enqueue } from '../jobs/job-queue.js';
import { findOutboxMessage, insertOutboxMessage, markOutboxMessageFailed, markOutboxMessageSent } from './store/outbox-messages.js';

export interface QueuedMail {
  to: string;
  subject: string;
  body: string;
  kind: string;
  /** The tenant that sends it (absent: the platform's own account mail). */
  tenantId?: string;
  /** A link worth showing in development logs when no SMTP server is configured. */
  link?: string;
}

/**
 * Stores the mail in the outbox (same transaction as the caller) and, with SMTP, queues its delivery.
 * It checks nothing: mail a tenant sends goes through sendTenantMail, which holds it to the plan.
 */
export async function queueMail(em: EntityManager, deps: AppDeps, mail: QueuedMail): Promise<void> {
  const message = await insertOutboxMessage(em, { tenantId: mail.tenantId ?? null, toAddress: mail.to, subject: mail.subject, body: mail.body, kind: mail.kind });
  if (deps.mailer.enabled) {
    await enqueue(em, sendMailJob, { messageId: message.id });
  } else if (deps.config.NODE_ENV !== 'production') {
    deps.log.info({ to: mail.to, kind: mail.kind, link: mail.link }, 'mail kept in the outbox (no SMTP_URL)');
  } else {
    deps.log.info({ to: mail.to, kind: mail.kind }, 'mail kept in the outbox (no SMTP_URL)');
  }
}

/** Delivers one outbox message; idempotent (a sent message is skipped). */
export async function deliverOutboxMessage(em: EntityManager, deps: AppDeps, messageId: string): Promise<void> {
  const message = await findOutboxMessage(em, messageId);
  if (!message || message.sentAt) return;
  try {
    await deps.mailer.send({ to: message.toAddress, subject: message.subject, body: message.body });
  } catch (err) {
    await markOutboxMessageFailed(em, message, (err as Error).message);
    throw err;
  }
  await markOutboxMessageSent(em, message);
}
