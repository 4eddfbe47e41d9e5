// Shares breakers between processes through PostgreSQL, no other infrastructure: a breaker this
// process opens or closes is written to provider_breakers and announced with NOTIFY in the same
// statement; every process LISTENs on its own connection and applies what the others announce. On
// (re)connecting it reads the table, so a process that started late or lost its connection catches up.
import { randomBytes } from 'node:crypto';
import type { Logger } from 'pino';
import type { SqlPool } from '../../db/sql-pool.js';
import { deleteBreaker, deleteStaleBreakers, listenForBreakers, selectOpenBreakers, upsertOpenBreaker, type BreakerListener, type BreakerRow } from './store/provider-breakers.js';
import type { BreakerChange, TargetHealth } from './target-health.js';

export interface BreakerSync {
  /** Writes and announces a change of this process's own breaker (in the background). */
  publish(change: BreakerChange): void;
  close(): Promise<void>;
}

interface Announcement {
  /** The announcing process (a process ignores its own announcements). */
  o: string;
  k: string;
  p: string;
  c: 'platform' | 'tenant';
  s: 'open' | 'closed';
  u: number;
}

const RECONNECT_MS = 1000;

/** The breakers open in any process, as the shared table holds them (for diagnostics). */
export const readSharedBreakers = (sql: SqlPool): Promise<BreakerRow[]> => selectOpenBreakers(sql);

export function startBreakerSync(options: { url: string; sql: SqlPool; health: TargetHealth; log: Logger }): BreakerSync {
  const { url, sql, health, log } = options;
  const origin = randomBytes(8).toString('hex');
  let client: BreakerListener | null = null;
  let closed = false;
  let timer: NodeJS.Timeout | null = null;
  // Writes go in order, one at a time: an open then a close of the same key must not swap.
  let writing: Promise<void> = Promise.resolve();

  function apply(message: Announcement) {
    if (message.o === origin) return;
    health.applyRemote({ key: message.k, provider: message.p, credential: message.c, state: message.s, openUntil: message.u });
  }

  async function catchUp() {
    const rows = await selectOpenBreakers(sql);
    const open = new Set(rows.map((r) => r.key));
    for (const row of rows) {
      if (row.open_until > Date.now()) health.applyRemote({ key: row.key, provider: row.provider, credential: row.credential, state: 'open', openUntil: row.open_until });
    }
    // Held open on a word whose closing this process missed while it was not listening.
    for (const key of health.remoteKeys()) if (!open.has(key)) health.applyRemote({ key, provider: '', credential: 'platform', state: 'closed', openUntil: 0 });
  }

  function reconnectLater() {
    if (closed || timer) return;
    timer = setTimeout(() => {
      timer = null;
      void connect();
    }, RECONNECT_MS);
    timer.unref();
  }

  async function connect() {
    let listener: BreakerListener;
    try {
      listener = await listenForBreakers(
        url,
        (payload) => {
          try {
            apply(JSON.parse(payload) as Announcement);
          } catch (err) {
            log.warn({ err }, 'an unreadable breaker announcement was ignored');
          }
        },
        (err) => {
          log.warn({ err }, 'the breaker listener lost its database connection; reconnecting');
          client = null;
          reconnectLater();
        },
      );
    } catch (err) {
      log.warn({ err }, 'the breaker listener could not connect; retrying');
      reconnectLater();
      return;
    }
    if (closed) {
      await listener.end();
      return;
    }
    client = listener;
    await catchUp().catch((err: unknown) => log.warn({ err }, 'reading the open breakers failed; the next reconnect reads them again'));
  }

  void connect();
  void deleteStaleBreakers(sql).catch(() => undefined);

  return {
    publish(change) {
      const payload = JSON.stringify({ o: origin, k: change.key, p: change.provider, c: change.credential, s: change.state, u: change.openUntil } satisfies Announcement);
      writing = writing.then(async () => {
        try {
          if (change.state === 'open') await upsertOpenBreaker(sql, { key: change.key, provider: change.provider, credential: change.credential, open_until: change.openUntil }, payload);
          else await deleteBreaker(sql, change.key, payload);
        } catch (err) {
          // Not shared this time; the breaker still works in this process, and the next change retries.
          log.warn({ err, provider: change.provider, state: change.state }, 'a breaker change could not be shared with other processes');
        }
      });
    },
    async close() {
      closed = true;
      if (timer) clearTimeout(timer);
      await writing;
      const listener = client;
      client = null;
      if (listener) await listener.end();
    },
  };
}
