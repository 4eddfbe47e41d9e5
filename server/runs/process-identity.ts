// Who is executing a run. Each process (API or worker) has an id and a heartbeat row; a run held by
// a process whose heartbeat stopped is picked up again by another process (crash recovery).
import { randomBytes } from 'node:crypto';
import os from 'node:os';
import type { Logger } from 'pino';
import type { SqlPool } from '../../db/sql-pool.js';
import { deleteProcessHeartbeat, upsertProcessHeartbeat } from './store/worker-heartbeats.js';

/** This process's owner id on the runs it executes (a worker_heartbeats id, prefixed `process:`). */
export const PROCESS_ID = `process:${os.hostname().slice(0, 30)}:${process.pid}:${randomBytes(4).toString('hex')}`;

/** A process not heard from for four beats is gone. */
export const staleAfterMs = (heartbeatMs: number) => heartbeatMs * 4;

/** Beats now and every `intervalMs`; the returned function stops and removes the row. */
export async function startProcessHeartbeat(sql: SqlPool, intervalMs: number, log: Logger): Promise<() => Promise<void>> {
  const beat = () => upsertProcessHeartbeat(sql, PROCESS_ID);
  await beat();
  const timer = setInterval(() => beat().catch((err) => log.warn({ err }, 'process heartbeat failed')), intervalMs);
  timer.unref();
  return async () => {
    clearInterval(timer);
    await deleteProcessHeartbeat(sql, PROCESS_ID).catch(() => undefined);
  };
}
