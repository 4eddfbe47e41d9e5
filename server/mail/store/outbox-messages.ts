// The outbox_messages table (mail waiting to be sent, or kept when no SMTP server is configured);
// this module alone writes it.
import type { InferEntity } from '@mikro-orm/core';
import { OutboxMessage } from '../../../db/entities/user.js';
import { sql } from 'kysely';
import { kyselyOf } from '../../../db/kysely.js';
import type { EntityManager } from '../../../db/orm.js';

export type OutboxMessageRow = InferEntity<typeof OutboxMessage>;

export interface NewOutboxMessage {
  tenantId: string | null;
  toAddress: string;
  subject: string;
  body: string;
  kind: string;
}

/** Adds the message and flushes the unit of work (the caller's transaction, when it has one). */
export async function insertOutboxMessage(em: EntityManager, mail: NewOutboxMessage): Promise<OutboxMessageRow> {
  const message = em.create(OutboxMessage, { tenant: mail.tenantId, toAddress: mail.toAddress, subject: mail.subject, body: mail.body, kind: mail.kind });
  await em.flush();
  return message;
}

export async function findOutboxMessage(em: EntityManager, messageId: string): Promise<OutboxMessageRow | null> {
  return em.findOne(OutboxMessage, { id: messageId });
}

/** Marks the message sent (clearing an earlier delivery error). */
export async function markOutboxMessageSent(em: EntityManager, message: OutboxMessageRow): Promise<void> {
  message.sentAt = new Date();
  message.lastError = null;
  await em.flush();
}

/** Keeps why the last delivery attempt failed. */
export async function markOutboxMessageFailed(em: EntityManager, message: OutboxMessageRow, error: string): Promise<void> {
  message.lastError = error;
  await em.flush();
}

/** Deletes messages sent before `before`; returns how many. */
export async function deleteOutboxMessagesSentBefore(em: EntityManager, before: Date): Promise<number> {
  const result = await kyselyOf(em).deleteFrom('outbox_messages').where('sent_at', '<', before).executeTakeFirst();
  return Number(result.numDeletedRows);
}

/** Deletes the tenant's mail to or about the end user: recipients, subject or body naming them (`patterns`: common/mentions.ts); how many. */
export async function deleteTenantMailMentioning(em: EntityManager, tenantId: string, patterns: { text: string; address: string }): Promise<number> {
  const result = await kyselyOf(em)
    .deleteFrom('outbox_messages')
    .where('tenant_id', '=', tenantId)
    .where((eb) =>
      eb.or([
        // Recipients are stored lower-cased, comma separated.
        eb(sql<string>`',' || replace(to_address, ' ', '') || ','`, 'like', patterns.address),
        eb('to_address', 'like', patterns.text),
        eb('subject', 'like', patterns.text),
        eb('body', 'like', patterns.text),
      ]),
    )
    .executeTakeFirst();
  return Number(result.numDeletedRows ?? 0n);
}
