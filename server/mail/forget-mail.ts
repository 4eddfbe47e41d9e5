// Erasing one end user: mail the tenant sent to them or about them (workflow send_email steps, the
// agents' send_email tool) leaves the outbox, sent or not. A delivery job still queued for such a
// mail finds no message and ends.
import type { EntityManager } from '../../db/orm.js';
import type { MentionPatterns } from '../common/mentions.js';
import { deleteTenantMailMentioning } from './store/outbox-messages.js';

/** Deletes the tenant's mail whose recipients, subject or body name the end user; how many. */
export function forgetTenantMailAbout(em: EntityManager, tenantId: string, patterns: MentionPatterns): Promise<number> {
  return deleteTenantMailMentioning(em, tenantId, patterns);
}
