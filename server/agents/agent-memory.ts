// What an agent remembers: earlier turns of the session (bounded by a token budget) and, per end
// user, preferences and facts. Every read and write is keyed by tenant, agent and end user, so
// nothing crosses tenants, agents or users.
import type { SqlPool } from '../../db/sql-pool.js';

export interface HistoryTurn {
  role: 'user' | 'assistant';
  content: string;
}

/** At most this many earlier messages are read, whatever the budget. */
const HISTORY_SCAN = 200;

/**
 * The latest turns of the session that fit `maxTokens` (newest kept first), oldest first, and how
 * many older ones were left out.
 */
export async function readConversationMemory(sql: SqlPool, tenantId: string, sessionId: string, maxTokens: number): Promise<{ turns: HistoryTurn[]; dropped: number }> {
  const rows = await sql.query<{ role: 'user' | 'assistant'; content: string; tokens: number; total: string }>(
    `select role, content, tokens, count(*) over () as total from agent_messages
      where tenant_id = $1 and session_id = $2 order by created_at desc, role asc limit ${HISTORY_SCAN}`,
    [tenantId, sessionId],
    'liya_agent_history',
  );
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

export type MemoryKind = 'preference' | 'memory';

/** Entries kept per end user and kind; the oldest go first beyond it. */
export const MEMORY_MAX_ENTRIES = 200;
export const MEMORY_VALUE_MAX_CHARS = 2000;

export interface MemoryScope {
  tenantId: string;
  agentId: string;
  userId: string;
}

export async function readUserMemory(sql: SqlPool, scope: MemoryScope, kind: MemoryKind, key?: string): Promise<Record<string, unknown>> {
  const rows = await sql.query<{ key: string; value: unknown }>(
    `select key, value from agent_user_memory where tenant_id = $1 and agent_id = $2 and user_id = $3 and kind = $4 and ($5::text is null or key = $5)
      order by updated_at desc limit ${MEMORY_MAX_ENTRIES}`,
    [scope.tenantId, scope.agentId, scope.userId, kind, key ?? null],
  );
  return Object.fromEntries(rows.map((r) => [r.key, r.value]));
}

/** Upserts entries, then trims the user's entries of that kind to the newest MEMORY_MAX_ENTRIES. */
export async function writeUserMemory(sql: SqlPool, scope: MemoryScope, kind: MemoryKind, entries: Record<string, unknown>): Promise<void> {
  const list = Object.entries(entries).slice(0, MEMORY_MAX_ENTRIES);
  if (!list.length) return;
  await sql.query(
    `with input as (select e.key, e.value from jsonb_each($5::jsonb) as e(key, value)),
     upserted as (
       insert into agent_user_memory (id, tenant_id, agent_id, user_id, kind, key, value, created_at, updated_at)
       select gen_random_uuid(), $1, $2, $3, $4, left(key, 200), value, now(), now() from input
       on conflict (tenant_id, agent_id, user_id, kind, key) do update set value = excluded.value, updated_at = now()
       returning id
     )
     delete from agent_user_memory where id in (
       select id from agent_user_memory where tenant_id = $1 and agent_id = $2 and user_id = $3 and kind = $4
        order by updated_at desc offset ${MEMORY_MAX_ENTRIES})`,
    [scope.tenantId, scope.agentId, scope.userId, kind, JSON.stringify(Object.fromEntries(list))],
  );
}
