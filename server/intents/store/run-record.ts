// What a completed intent run writes (usage_events, usage_counters, sessions, session_messages,
// intent_cache), in one statement; the intent_cache rows are written here alone (their expiry and
// erasure too).
import { sql as rawSql } from 'kysely';
import { kyselyOf } from '../../../db/kysely.js';
import type { EntityManager } from '../../../db/orm.js';
import type { SqlPool } from '../../../db/sql-pool.js';
import { monthKey } from '../../common/schemas.js';
import type { RunSession, Turn } from '../../sessions/sessions.service.js';
import { onlineSampleSql } from '../../runs/store/online-samples.js';
import { ADD_TO_USAGE_COUNTER_SQL, insertUsageEventsSql, quotaCrossedSql, usageRowsOf, type UsageEventInput } from '../../usage/store/usage-events.js';

export interface RunRecord {
  tenantId: string;
  usage: UsageEventInput[];
  session: RunSession;
  turn: Turn;
  /** Set when the answer goes into the intent cache. */
  cache: { key: string; ttlSeconds: number } | null;
  /** Record intent.run.completed (a subscription of the tenant named it when the run began). */
  intentEvent: boolean;
  /** Queue the run for online evaluation by these rules (server/runs/online-sampling.ts); null: not sampled. */
  online: { ruleIds: string[]; sourceKind: string; sourceId: string } | null;
}

// Everything one run writes — usage events and the monthly counter, the session (inserted on its
// first turn, moved on later ones), both messages, the cache entry — in ONE statement: one round
// trip, atomic on its own, with asynchronous commit (no wait for the WAL flush; a crash can lose
// the last fraction of a second of run history, never part of a run). Foreign keys are checked at
// the end of the statement, so the messages may reference the session inserted beside them.
// Raw(other): a hot multi-CTE statement on the SqlPool, run as the named prepared statement `liya_run_record`.
const RUN_RECORD_SQL = `
with async_commit as (select set_config('synchronous_commit', 'off', true)),
events as (${insertUsageEventsSql('$1')}
),
counter as (
  insert into usage_counters (tenant_id, month, requests, tokens, cost_usd) values ($2, $3, $4, $5, $6)
  ${ADD_TO_USAGE_COUNTER_SQL}
),
${quotaCrossedSql('$4', '$5')},
session as (
  insert into sessions (id, tenant_id, user_id, domain, intent, status, message_count, tokens_used, cost_usd, last_activity_at, created_at)
  values ($7, $2, $8, $9, $10, 'active', 2, $11, $12, now(), now())
  on conflict (id) do update set message_count = sessions.message_count + 2, tokens_used = sessions.tokens_used + excluded.tokens_used,
    cost_usd = sessions.cost_usd + excluded.cost_usd, last_activity_at = now(), intent = excluded.intent
  returning 1
),
messages as (
  insert into session_messages (id, tenant_id, session_id, role, intent, content, model, tokens, cost_usd, latency_ms, cached, created_at) values
    (gen_random_uuid(), $2, $7, 'user', $10, $13::jsonb, null, 0, 0, 0, false, clock_timestamp()),
    ($14, $2, $7, 'assistant', $10, $15::jsonb, $16, $11, $12, $17, $18, clock_timestamp() + interval '1 millisecond')
  returning 1
),
cache as (
  insert into intent_cache (cache_key, tenant_id, output, model, expires_at, created_at)
  select $19::text, $2::uuid, $15::jsonb, $16::text, now() + make_interval(secs => $20::int), now() where $19::text is not null
  on conflict (cache_key) do update set output = excluded.output, model = excluded.model, expires_at = excluded.expires_at, created_at = now()
  returning 1
)
select (select count(*) from async_commit) + 0 * (select count(*) from quota_crossed) as ok`;

// Raw(other): the closing select of liya_run_record, which its variants extend.
const RUN_RECORD_END = 'select (select count(*) from async_commit) + 0 * (select count(*) from quota_crossed) as ok';

// The opt-in intent.run.completed event, recorded by liya_emit (the events migrations) in the run's
// own statement: its subscriptions are checked again there.
const INTENT_EVENT_CTE = `, intent_event as (
  select liya_emit($2::uuid, 'intent.run.completed', jsonb_build_object('message_id', $14::text, 'session_id', $7::text, 'domain', $9::text,
    'intent', $10::text, 'model', $16::text, 'tokens', $11::int, 'cost_usd', $12::float8, 'latency_ms', $17::int, 'cached', $18::boolean,
    'created_at', liya_iso(now())), $9::text, null, null, true) as emitted
)`;

// A sampled run's online evaluation samples: the input as the model saw it (redacted) and the
// answer as the caller got it, one row per rule that picked the run.
const ONLINE_SAMPLE_CTE = `, ${onlineSampleSql({ tenant: '$2::uuid', rules: '$21', sourceKind: '$22::text', sourceId: '$23::text', input: '$13::jsonb', output: '$15::jsonb', latencyMs: '$17::int', costUsd: '$12::numeric' })}`;

/** The run record's statement with the event, the samples, both or neither, and its prepared statement's name. */
function runRecordVariant(event: boolean, sample: boolean): { text: string; name: string } {
  const ctes = `${event ? INTENT_EVENT_CTE : ''}${sample ? ONLINE_SAMPLE_CTE : ''}`;
  const end = `${RUN_RECORD_END.replace(' as ok', '')}${event ? ' + (select count(*) from intent_event)' : ''}${sample ? ' + 0 * (select count(*) from online_sample)' : ''} as ok`;
  return { text: RUN_RECORD_SQL.replace(RUN_RECORD_END, `${ctes}\n${end}`), name: `liya_run_record${event ? '_event' : ''}${sample ? '_sample' : ''}` };
}

// Raw(other): the variants of liya_run_record, each a named prepared statement.
const RUN_RECORD_VARIANTS = [runRecordVariant(false, false), runRecordVariant(true, false), runRecordVariant(false, true), runRecordVariant(true, true)];

/** Writes a completed run; `replyId` becomes the assistant message id. */
export async function writeRunRecord(sql: SqlPool, record: RunRecord, replyId: string): Promise<void> {
  const { usage, session, turn } = record;
  const { requests, tokens, cost, json } = usageRowsOf(usage);
  const sampled = record.online !== null && record.online.ruleIds.length > 0;
  const variant = RUN_RECORD_VARIANTS[(record.intentEvent ? 1 : 0) + (sampled ? 2 : 0)];
  const params: unknown[] = [
    json,
    record.tenantId,
    monthKey(),
    requests,
    tokens,
    cost.toFixed(6),
    session.id,
    session.userId,
    session.domain,
    turn.intent,
    turn.tokens,
    turn.costUsd.toFixed(6),
    JSON.stringify(turn.userContent ?? null),
    replyId,
    JSON.stringify(turn.assistantContent ?? null),
    turn.model,
    Math.round(turn.latencyMs),
    turn.cached,
    record.cache?.key ?? null,
    record.cache?.ttlSeconds ?? 0,
  ];
  if (sampled) params.push(record.online!.ruleIds, record.online!.sourceKind, record.online!.sourceId);
  await sql.query(variant.text, params, variant.name);
}

/** Deletes cached intent answers that expired before `now`; answers how many. */
export async function deleteExpiredIntentCache(em: EntityManager, now: Date): Promise<number> {
  const result = await kyselyOf(em).deleteFrom('intent_cache').where('expires_at', '<', now).executeTakeFirst();
  return Number(result.numDeletedRows ?? 0n);
}

/**
 * Deletes the tenant's cached answers whose key is one of `keys` or whose answer is one of
 * `outputs` (JSON values); answers how many.
 */
export async function deleteCachedAnswers(em: EntityManager, tenantId: string, keys: string[], outputs: unknown[]): Promise<number> {
  if (!keys.length && !outputs.length) return 0;
  const result = await kyselyOf(em)
    .deleteFrom('intent_cache')
    .where('tenant_id', '=', tenantId)
    .where((eb) =>
      eb.or([
        rawSql<boolean>`cache_key = any(${keys}::text[])`,
        // The answers as one JSON array: jsonb equality, whatever their shape.
        rawSql<boolean>`output in (select value from jsonb_array_elements(${JSON.stringify(outputs)}::jsonb))`,
      ]),
    )
    .executeTakeFirst();
  return Number(result.numDeletedRows ?? 0n);
}
