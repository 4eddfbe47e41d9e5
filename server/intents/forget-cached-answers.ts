// Erasing one end user: the cached intent answers their inputs produced or read go too. The cache
// records no user (one entry serves every end user who asks the same), so the entries are found
// two exact ways from the user's transcript: the key each of their inputs had, recomputed for
// every version the intent has had (the key holds the version run), and the answer itself (a run
// caches exactly the answer it stores as the assistant's message). An identical answer cached for
// another input goes too: a later cache miss, never a wrong answer.
import type { EntityManager } from '../../db/orm.js';
import { isBuiltInDomain } from '../domains/built-in-domains.js';
import { intentCacheKey } from './intent-cache.js';
import { builtInIntents } from './resolve-intent.js';
import { findIntent } from './store/custom-intents.js';
import { deleteCachedAnswers } from './store/run-record.js';

/** A transcript message of a conversation with the intents (session_messages). */
export interface TranscriptMessage {
  domain: string;
  intent: string | null;
  role: 'user' | 'assistant';
  content: unknown;
}

/** Versions a key is recomputed for, newest first: far more saves than any intent has. */
const MAX_VERSIONS = 1000;

/** The cache identity of `domain/intent` (its id, and every version it has had), or null when it no longer exists. */
async function cacheIdentity(em: EntityManager, tenantId: string, domain: string, intent: string): Promise<{ id: string; versions: number[] } | null> {
  let found: { id: string; version: number } | null | undefined;
  if (isBuiltInDomain(domain)) found = builtInIntents(domain).find((i) => i.key === intent);
  else {
    const row = await findIntent(em, tenantId, domain, intent);
    found = row ? { id: row.id, version: row.currentVersion } : null;
  }
  if (!found) return null;
  const count = Math.min(Math.max(found.version, 0) + 1, MAX_VERSIONS);
  return { id: found.id, versions: Array.from({ length: count }, (_, i) => found.version - i) };
}

/** Deletes the tenant's cached answers derived from these messages; answers how many. */
export async function forgetCachedAnswers(em: EntityManager, tenantId: string, messages: TranscriptMessage[]): Promise<number> {
  const identities = new Map<string, Promise<{ id: string; versions: number[] } | null>>();
  const keys = new Set<string>();
  const outputs: unknown[] = [];
  for (const message of messages) {
    if (message.role === 'assistant') {
      if (message.content !== null && message.content !== undefined) outputs.push(message.content);
      continue;
    }
    const input = message.content;
    if (!message.intent || !input || typeof input !== 'object' || Array.isArray(input)) continue;
    const name = `${message.domain}/${message.intent}`;
    if (!identities.has(name)) identities.set(name, cacheIdentity(em, tenantId, message.domain, message.intent));
    const identity = await identities.get(name)!;
    for (const version of identity?.versions ?? []) keys.add(intentCacheKey(tenantId, identity!.id, version, input as Record<string, unknown>));
  }
  return deleteCachedAnswers(em, tenantId, [...keys], outputs);
}
