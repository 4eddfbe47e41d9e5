// What an agent remembers: earlier turns of the session (bounded by a token budget) and, per end
// user, preferences and facts. Every read and write is keyed by tenant, agent and end user, so
// nothing crosses tenants, agents or users.
import type { SqlPool } from '../../db/sql-pool.js';
import { listRecentMessages } from './store/agent-runs.js';
import { listUserMemory, MEMORY_MAX_ENTRIES, upsertUserMemory, type MemoryKind, type MemoryScope } from './store/agent-user-memory.js';

export type { MemoryScope } from './store/agent-user-memory.js';

export interface HistoryTurn {
  role: 'user' | 'assistant';
  content: string;
}

/**
 * The latest turns of the session that fit `maxTokens` (newest kept first), oldest first, and how
 * many older ones were left out.
 */
export async function readConversationMemory(sql: SqlPool, tenantId: string, sessionId: string, maxTokens: number): Promise<{ turns: HistoryTurn[]; dropped: number }> {
  const rows = await listRecentMessages(sql, tenantId, sessionId);
  const kept: HistoryTurn[] = [];
  let used = 0;
  for (const row of rows) {
    if (used + row.tokens > maxTokens) break;
    used += row.tokens;
    kept.push({ role: row.role, content: row.content });
  }
  const total = rows.length ? Number(rows[0].total) : 0;
  return { turns: kept.reverse(), dropped: total - kept.length };
}

export const MEMORY_VALUE_MAX_CHARS = 2000;

export async function readUserMemory(sql: SqlPool, scope: MemoryScope, kind: MemoryKind, key?: string): Promise<Record<string, unknown>> {
  const rows = await listUserMemory(sql, scope, kind, key ?? null);
  return Object.fromEntries(rows.map((r) => [r.key, r.value]));
}

/** Upserts entries, then trims the user's entries of that kind to the newest MEMORY_MAX_ENTRIES. */
export async function writeUserMemory(sql: SqlPool, scope: MemoryScope, kind: MemoryKind, entries: Record<string, unknown>): Promise<void> {
  const list = Object.entries(entries).slice(0, MEMORY_MAX_ENTRIES);
  if (!list.length) return;
  await upsertUserMemory(sql, scope, kind, Object.fromEntries(list));
}
