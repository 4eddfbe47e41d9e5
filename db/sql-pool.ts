import { AsyncResource } from 'node:async_hooks';
import pg from 'pg';
import type { Logger } from 'pino';

/**
 * Parameterised SQL on a plain `pg` pool for the hot paths: authentication on every request, and
 * the statements of intent, agent, workflow and eval runs (the stores that use it say so).
 */
export interface SqlPool {
  /**
   * `prepare` names a server-side prepared statement: each connection parses and plans the text
   * once, later executions skip that. Only for fixed texts (one name per text), so the set of
   * statements each connection keeps stays small.
   */
  query<T extends pg.QueryResultRow>(text: string, params?: unknown[], prepare?: string): Promise<T[]>;
  /**
   * `query` on a connection whose session has `settings`: set the first time that connection runs
   * a statement asking for them (one more round trip, once), and kept for the connection's life.
   * Only for settings no other statement depends on (pgvector's index-scan settings: only the
   * HNSW leg scans that index). Names and values must be fixed text (letters, digits, dots and
   * underscores), never request data.
   */
  queryWithSettings<T extends pg.QueryResultRow>(settings: Record<string, string | number>, text: string, params?: unknown[], prepare?: string): Promise<T[]>;
  /** Runs `work` in one transaction on one connection (rolled back when it throws). */
  transaction<T>(work: (query: SqlPool['query']) => Promise<T>): Promise<T>;
  /**
   * Runs `work` on a connection of its own, opened outside the pool and closed after it, with no
   * statement timeout: for maintenance that may take minutes (an index build), which must never hold
   * one of the few connections the hot paths share. Statements run one by one, outside any
   * transaction (CREATE INDEX CONCURRENTLY needs that), and session locks end with the connection.
   */
  session<T>(work: (query: SqlPool['query']) => Promise<T>): Promise<T>;
  /** Its connections now (open, idle, requests waiting for one) and its size, for metrics. */
  connections(): { total: number; idle: number; waiting: number; max: number };
  end(): Promise<void>;
}

/**
 * A plain `pg` pool beside MikroORM's: for single-statement reads on every request it skips the
 * ORM's query formatting (values are sent as parameters, not written into the SQL text).
 */
export function createSqlPool(url: string, max: number, log: Logger): SqlPool {
  const pool = new pg.Pool({ connectionString: url, max });
  // A connection opened while serving a run reports its failures later from that run's async
  // context: bound to this one, their log lines do not name a run long over.
  pool.on('error', AsyncResource.bind((err: Error) => log.warn({ err }, 'database pool error')));
  // pg-pool listens on a client only while it sits idle: one checked out for a transaction whose
  // connection drops would emit 'error' to nobody, which ends the process. The query in flight
  // rejects on its own (and its caller reports it), so there is nothing more to do here.
  const connectionError = AsyncResource.bind((err: Error) => log.debug({ err }, 'database connection error'));
  pool.on('connect', (client) => client.on('error', connectionError));
  // The session settings each connection was given by queryWithSettings (its SET text).
  const sessionSettings = new WeakMap<pg.PoolClient, string>();
  return {
    async query(text, params = [], prepare) {
      return (await pool.query(prepare ? { name: prepare, text, values: params } : { text, values: params })).rows;
    },
    async queryWithSettings(settings, text, params = [], prepare) {
      // Raw(other): SET is a utility command no builder writes; names and values pass settingWord().
      const set = Object.entries(settings).map(([name, value]) => `set ${settingWord(name)} = '${settingWord(String(value))}'`).join('; ');
      const client = await pool.connect();
      try {
        if (sessionSettings.get(client) !== set) {
          // Forgotten first: if the SET fails half-way, the next use sets them all again.
          sessionSettings.delete(client);
          await client.query(set);
          sessionSettings.set(client, set);
        }
        const { rows } = await client.query(prepare ? { name: prepare, text, values: params } : { text, values: params });
        client.release();
        return rows;
      } catch (err) {
        // As pool.query does: a connection whose statement failed is closed, not reused.
        client.release(err as Error);
        throw err;
      }
    },
    async transaction(work) {
      const client = await pool.connect();
      try {
        await client.query('begin');
        const result = await work(async (text, params = [], prepare) => (await client.query(prepare ? { name: prepare, text, values: params } : { text, values: params })).rows);
        await client.query('commit');
        return result;
      } catch (err) {
        await client.query('rollback').catch(() => undefined);
        throw err;
      } finally {
        client.release();
      }
    },
    async session(work) {
      const client = new pg.Client({ connectionString: url });
      client.on('error', connectionError);
      await client.connect();
      try {
        // Raw(other): SET is a utility command no builder writes (a session's work may take minutes).
        await client.query('set statement_timeout = 0');
        return await work(async (text, params = []) => (await client.query({ text, values: params })).rows);
      } finally {
        await client.end().catch(() => undefined);
      }
    },
    connections: () => ({ total: pool.totalCount, idle: pool.idleCount, waiting: pool.waitingCount, max }),
    end: () => pool.end(),
  };
}

/** A setting's name or value as written into SET: a number or a plain word, nothing else. */
function settingWord(word: string): string {
  if (!/^[A-Za-z0-9_.]+$/.test(word)) throw new Error(`not a setting name or value: ${JSON.stringify(word)}`);
  return word;
}
