// provider_breakers: the open breakers every process shares. A row is an open breaker (a closed one
// is deleted); every change is announced on the `liya_provider_breakers` channel in the same
// statement, so a listener never reads a change before it is committed.
import { sql as kysql } from 'kysely';
import pg from 'pg';
import type { SqlPool } from '../../../db/sql-pool.js';
import { build, runBuilt, statement } from '../../../db/statements.js';

export const BREAKER_CHANNEL = 'liya_provider_breakers';

export interface BreakerRow {
  key: string;
  provider: string;
  credential: 'platform' | 'tenant';
  /** Epoch ms. */
  open_until: number;
}

/** The announcement of `payload` on the breakers' channel, committed with the statement. */
const announce = (payload: string) => build.fn<void>('pg_notify', [kysql.lit(BREAKER_CHANNEL), kysql.val(payload)]);

const OPEN = statement<{ key: string; provider: string; credential: string; openUntil: number; payload: string }>()('provider_breaker_open', (p) =>
  build
    .with('opened', (db) =>
      db
        .insertInto('provider_breakers')
        .values({
          key: p.key,
          provider: p.provider,
          credential: p.credential,
          open_until: kysql<Date>`to_timestamp(${p.openUntil}::double precision / 1000)`,
          updated_at: kysql<Date>`now()`,
        })
        .onConflict((oc) => oc.column('key').doUpdateSet({ open_until: (eb) => eb.ref('excluded.open_until'), updated_at: kysql<Date>`now()` })),
    )
    .selectNoFrom(announce(p.payload).as('pg_notify')),
);

// A data-modifying WITH runs whether or not the select reads it: the announcement goes either way.
const CLOSE = statement<{ key: string; payload: string }>()('provider_breaker_close', (p) =>
  build
    .with('closed', (db) => db.deleteFrom('provider_breakers').where('key', '=', p.key))
    .selectNoFrom(announce(p.payload).as('pg_notify')),
);

const SELECT_OPEN = statement<Record<string, never>>()('provider_breakers_open', () =>
  build
    .selectFrom('provider_breakers')
    .select(['key', 'provider', 'credential', kysql<number>`(extract(epoch from open_until) * 1000)::float8`.as('open_until')])
    .where('open_until', '>', kysql<Date>`now() - interval '1 hour'`)
    .orderBy('key'),
).as<BreakerRow>();

/** Records the breaker `key` open until `openUntil` (epoch ms) and announces `payload`. */
export async function upsertOpenBreaker(sql: SqlPool, row: BreakerRow, payload: string): Promise<void> {
  await OPEN.run(sql, { key: row.key, provider: row.provider, credential: row.credential, openUntil: row.open_until, payload });
}

/** Forgets the breaker `key` (closed) and announces `payload`. */
export async function deleteBreaker(sql: SqlPool, key: string, payload: string): Promise<void> {
  await CLOSE.run(sql, { key, payload });
}

/** Breakers still open (or past their end by under an hour: a probe may not have gone yet). */
export async function selectOpenBreakers(sql: SqlPool): Promise<BreakerRow[]> {
  return SELECT_OPEN.run(sql, {});
}

/** Rows of breakers that ended over a day ago and were never closed (their process went away). */
export async function deleteStaleBreakers(sql: SqlPool): Promise<number> {
  const rows = await runBuilt(sql, build.deleteFrom('provider_breakers').where('open_until', '<', kysql<Date>`now() - interval '1 day'`).returning('key'));
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
    // Raw(other): LISTEN is a session command no builder writes.
    await client.query(`listen ${BREAKER_CHANNEL}`);
  } catch (err) {
    lost = true;
    await client.end().catch(() => undefined);
    throw err;
  }
  return { end: () => client.end().catch(() => undefined) };
}
