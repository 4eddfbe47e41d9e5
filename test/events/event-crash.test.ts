// Delivery across crashes: `liya start` as a child process on a PostgreSQL of this test's own; a
// burst of 1,000 committed changes (API keys written in transactions of 50, each firing key.created
// in its own transaction) and 200 rolled-back ones, while the server delivering them is killed
// with SIGKILL and replaced, and then PostgreSQL is restarted (pg_ctl restart -m fast). The
// receiver deduplicates by webhook-id, as Standard Webhooks asks. Checked: every committed change's
// event is delivered, one event (one webhook-id) per change, none for a rolled-back change, and
// every delivery signed.
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEmbeddedPostgres, type EmbeddedPostgres } from '../../db/embedded.js';
import { applyMigrations, ensureDatabase, openOrm } from '../../db/orm.js';
import { loadConfig } from '../../server/config.js';
import type { AppDeps } from '../../server/deps.js';
import { migrateJobSchema } from '../../worker/runner.js';
import { bearer } from '../support/client.js';
import { startEventReceiver, verifyDelivery, type EventReceiver } from '../support/event-receiver.js';
import { adminHeaders, uniqueEmail } from '../support/fixtures.js';
import { freePort } from '../support/free-port.js';
import { ADMIN_SECRET } from '../support/server.js';
import { startServerProcess, stopServerProcess, type ServerProcess } from '../support/server-process.js';
import { pgCtl as pgCtlIn } from '../support/pg-ctl.js';
import { waitFor } from '../support/wait-for.js';

const COMMITTED = 1_000;
const ROLLED_BACK = 200;
const BATCH = 50;

let dir: string;
let dataDir: string;
let pgPort: number;
let embedded: EmbeddedPostgres | null = null;
let databaseUrl: string;
let pool: pg.Pool;
let receiver: EventReceiver;
const procs: ServerProcess[] = [];
let tenantId: string;
let secret: string;

const pgCtl = (args: string[]) => pgCtlIn(dataDir, args);

const startProcess = async (name: string) => {
  const proc = await startServerProcess(
    name,
    {
      LOG_LEVEL: 'info', DATABASE_URL: databaseUrl, ADMIN_SECRET, WORKER: '1', WORKER_CONCURRENCY: '4', DB_POOL_MAX: '6', HEARTBEAT_MS: '300',
      OUTBOUND_ALLOWED_HOSTS: '127.0.0.1', EVENT_DELIVERY_TIMEOUT_MS: '2000', EVENT_RETRY_SCHEDULE: '0.2,0.5,1,1,1,1,1,1,1,1',
    },
    (output) => output.includes('job runner started'),
  );
  procs.push(proc);
  return proc;
};

const describeProcs = () => procs.map((p) => `--- ${p.name} (${p.child.exitCode ?? p.child.signalCode ?? 'running'})\n${p.output.slice(-3000)}`).join('\n');

beforeAll(async () => {
  receiver = await startEventReceiver();
  dir = await mkdtemp(path.join(os.tmpdir(), 'liya-events-crash-'));
  dataDir = path.join(dir, 'pg');
  pgPort = await freePort();
  embedded = await startEmbeddedPostgres({ dataDir, port: pgPort });
  await ensureDatabase(embedded.url(), 'liya');
  databaseUrl = embedded.url('liya');
  const orm = await openOrm({ url: databaseUrl, quiet: true });
  await applyMigrations(orm);
  await orm.close(true);
  pool = new pg.Pool({ connectionString: databaseUrl, max: 3 });
  pool.on('error', () => undefined);
  pool.on('connect', (client) => client.on('error', () => undefined));
  await migrateJobSchema(pool, { log: pino({ level: 'silent' }), config: loadConfig({}) } as unknown as AppDeps);
  const first = await startProcess('first');
  const signup = await first.api.post('/auth/signup', { companyName: 'Crash events', email: uniqueEmail('crash'), password: 'crash test password' });
  expect(signup.status, signup.text).toBe(201);
  tenantId = signup.body.data.tenant.tenantId;
  // The enterprise plan's rate (1,000 deliveries a second), so the burst is not spread out by it.
  expect((await first.api.patch(`/admin/tenants/${tenantId}`, { billingPlan: 'enterprise' }, { headers: adminHeaders })).status).toBe(200);
  const sub = await first.api.post('/v1/event-subscriptions', { url: `${receiver.url}/crash`, event_types: ['key.created'] }, { headers: bearer(signup.body.data.apiKey) });
  expect(sub.status, sub.text).toBe(201);
  secret = sub.body.data.secret;
}, 120_000);

afterAll(async () => {
  for (const proc of procs) await stopServerProcess(proc);
  await pool?.end().catch(() => undefined);
  await receiver?.close();
  await embedded?.stop().catch(() => undefined);
  if (dataDir) await pgCtl(['stop', '-m', 'immediate']).catch(() => undefined);
  if (dir) await rm(dir, { recursive: true, force: true });
}, 120_000);

/** `n` key rows in one transaction; rolled back instead of committed when `rollBack`. Answers their ids. */
async function writeKeys(n: number, rollBack: boolean): Promise<string[]> {
  const ids = Array.from({ length: n }, () => randomUUID());
  const client = await pool.connect();
  try {
    await client.query('begin');
    await client.query(
      `insert into api_keys (id, tenant_id, key_hash, key_preview, name, created_at)
       select id, $1, md5(id::text) || md5(id::text || 'x'), 'svc_burst', 'burst-' || id, now() from unnest($2::uuid[]) as id`,
      [tenantId, ids],
    );
    await client.query(rollBack ? 'rollback' : 'commit');
  } finally {
    client.release();
  }
  return ids;
}

const uniqueDelivered = () => new Map(receiver.received.filter((r) => r.path === '/crash').map((r) => [r.json.id, r]));

describe('events across a kill -9 and a PostgreSQL restart', () => {
  it('delivers every committed event, one webhook-id per change, none for a rolled-back one', { timeout: 240_000 }, async () => {
    // The receiver holds every request until the kill: the first process's deliveries are all in
    // flight when it dies (received, never answered), so its successor must send them again.
    receiver.answer('hold');
    const committed: string[] = [];
    const rolledBack: string[] = [];
    for (let i = 0; i < COMMITTED / BATCH; i++) {
      committed.push(...(await writeKeys(BATCH, false)));
      if (i % 5 === 0) rolledBack.push(...(await writeKeys(ROLLED_BACK / 4, true)));
    }
    await waitFor(() => uniqueDelivered().size >= 100, 'deliveries under way', 60_000);
    procs[0].child.kill('SIGKILL');
    const heldAtKill = receiver.received.filter((r) => r.path === '/crash').length;
    await procs[0].exited;
    receiver.release();
    receiver.answer(200);
    await startProcess('second');
    await waitFor(() => uniqueDelivered().size >= 500, 'deliveries going on after the kill', 60_000).catch((err: Error) => {
      throw new Error(`${err.message}: ${uniqueDelivered().size} delivered\n${describeProcs()}`);
    });
    await pgCtl(['restart', '-m', 'fast']);
    await waitFor(() => uniqueDelivered().size >= COMMITTED, 'every committed event delivered', 120_000).catch((err: Error) => {
      throw new Error(`${err.message}: ${uniqueDelivered().size} delivered\n${describeProcs()}`);
    });

    const byId = uniqueDelivered();
    const keys = [...byId.values()].map((d) => d.json.data.key_id as string);
    // One event per change: as many webhook-ids as changes, each change once.
    expect(new Set(keys).size).toBe(keys.length);
    expect([...new Set(keys)].sort()).toEqual([...committed].sort());
    for (const id of rolledBack) expect(keys).not.toContain(id);
    for (const delivery of byId.values()) expect(verifyDelivery(delivery, secret)).toBeTruthy();
    // Settled on the server too: nothing pending, nothing failed.
    const settled = async () => (await pool.query(`select count(*) filter (where status = 'delivered')::int as delivered, count(*) filter (where status <> 'delivered')::int as other from event_deliveries`)).rows[0];
    await waitFor(async () => (await settled()).other === 0, 'every delivery settled', 60_000);
    expect(await settled()).toEqual({ delivered: COMMITTED, other: 0 });
    // The requests held at the kill (received, never answered) were sent again by the successor,
    // once their lease ended, and dropped by the receiver as repeats.
    const all = receiver.received.filter((r) => r.path === '/crash').length;
    expect(all - byId.size).toBeGreaterThanOrEqual(heldAtKill);
    expect(uniqueDelivered().size).toBe(COMMITTED);
    console.log(`[events crash] ${COMMITTED} committed, ${ROLLED_BACK} rolled back: ${byId.size} events delivered in ${all} requests (${all - byId.size} repeats dropped by webhook-id; ${heldAtKill} in flight at the kill)`);
  });
});
