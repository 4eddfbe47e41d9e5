// Erasing one end user: the tenant's audit log stays (who changed what is the tenant's record), but
// an entry's target or details that name the person (a saved workflow value's key, say) are
// replaced by a placeholder.
import type { EntityManager } from '../../db/orm.js';
import { ERASED, eraseMentions, mentions, mentionPatterns } from '../common/mentions.js';
import { findEntriesMentioning, rewriteEntry } from './store/audit-log.js';

/** Anonymises the tenant's audit entries that name the end user; how many were rewritten. */
export async function anonymiseAuditMentions(em: EntityManager, tenantId: string, userId: string): Promise<number> {
  const entries = await findEntriesMentioning(em, tenantId, mentionPatterns(userId));
  let rewritten = 0;
  for (const entry of entries) {
    const targetId = entry.target_id !== null && mentions(entry.target_id, userId) ? ERASED : entry.target_id;
    const details = entry.details === null ? null : (eraseMentions(entry.details, userId) as Record<string, unknown>);
    // The pattern may find text the stricter rule does not (a short id inside a longer value).
    if (targetId === entry.target_id && JSON.stringify(details) === JSON.stringify(entry.details)) continue;
    await rewriteEntry(em, tenantId, entry.id, { targetId, details });
    rewritten++;
  }
  return rewritten;
}
