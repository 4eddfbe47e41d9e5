// provider_breakers: the open breakers every process shares. A row is an open breaker (a closed one
// is deleted); every change is announced on the `liya_provider_breakers` channel in the same
// statement, so a listener never reads a change before it is committed.
import pg from 'pg';
import type { SqlPool } from '../../../db/sql-pool.js';

export const BREAKER_CHANNEL = 'liya_provider_breakers';

export interface BreakerRow {
  key: string;
  provider: string;
  credential: 'platform' | 'tenant';
  /** Epoch ms. */
  open_until: number;
}

/** Records the breaker `key` open until `openUntil` (epoch ms) and announces `payload`. */
export async function upsertOpenBreaker(sql: SqlPool, row: BreakerRow, payload: string): Promise<void> {
  await sql.query(
    `with opened as (
       insert into provider_breakers (key, provider, credential, open_until, updated_at)
       values ($1, $2, $3, to_timestamp($4::double precision / 1000), now())
       on conflict (key) do update set open_until = excluded.open_until, updated_at = now()
       )
     select pg_notify('${BREAKER_CHANNEL}', $5)`,
    [row.key, row.provider, row.credential, row.open_until, payload],
    'provider_breaker_open',
  );
}

/** Forgets the breaker `key` (closed) and announces `payload`. */
export async function deleteBreaker(sql: SqlPool, key: string, payload: string): Promise<void> {
  // A data-modifying WITH runs whether or not the select reads it: the announcement goes either way.
  await sql.query(`with closed as (delete from provider_breakers where key = $1) select pg_notify('${BREAKER_CHANNEL}', $2)`, [key, payload], 'provider_breaker_close');
}

/** Breakers still open (or past their end by under an hour: a probe may not have gone yet). */
export async function selectOpenBreakers(sql: SqlPool): Promise<BreakerRow[]> {
  return sql.query<BreakerRow>(
    `select key, provider, credential, (extract(epoch from open_until) * 1000)::float8 as open_until
       from provider_breakers where open_until > now() - interval '1 hour' order by key`,
    [],
    'provider_breakers_open',
  );
}

/** Rows of breakers that ended over a day ago and were never closed (their process went away). */
export async function deleteStaleBreakers(sql: SqlPool): Promise<number> {
  const rows = await sql.query<{ key: string }>(`delete from provider_breakers where open_until < now() - interval '1 day' returning key`);
  return rows.length;
}

export interface BreakerListener {
  end(): Promise<void>;
}

/**
 * A connection of its own that LISTENs for breaker announcements (LISTEN needs one session for as
 * long as it listens: never a pooled connection). `onLost` is told once if the connection fails.
 */
export async function listenForBreakers(url: string, onPayload: (payload: string) => void, onLost: (err: Error) => void): Promise<BreakerListener> {
  const client = new pg.Client({ connectionString: url });
  let lost = false;
  client.on('error', (err) => {
    if (lost) return;
    lost = true;
    client.end().catch(() => undefined);
    onLost(err);
  });
  client.on('notification', (msg) => {
    if (msg.channel === BREAKER_CHANNEL && msg.payload) onPayload(msg.payload);
  });
  try {
    await client.connect();
    await client.query(`listen ${BREAKER_CHANNEL}`);
  } catch (err) {
    lost = true;
    await client.end().catch(() => undefined);
    throw err;
  }
  return { end: () => client.end().catch(() => undefined) };
}
