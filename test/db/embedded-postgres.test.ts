import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEmbeddedPostgres, type EmbeddedPostgres } from '../../db/embedded.js';
import { ensureDatabase } from '../../db/orm.js';
import { startTestServer } from '../support/server.js';
import { freePort } from '../support/free-port.js';
import { waitFor } from '../support/wait-for.js';

async function query(url: string, text: string) {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query(text)).rows;
  } finally {
    await client.end();
  }
}

let dir: string;
let dataDir: string;
let port: number;
const started: EmbeddedPostgres[] = [];

beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'liya-embedded-'));
  dataDir = path.join(dir, 'pg');
  port = await freePort();
});
afterAll(async () => {
  for (const server of started) await server.stop();
  await rm(dir, { recursive: true, force: true });
});

describe('embedded PostgreSQL lifecycle', () => {
  it('initialises on first start and keeps data across restarts', async () => {
    const first = await startEmbeddedPostgres({ dataDir, port });
    started.push(first);
    await query(first.url(), 'create table kept (v int); insert into kept values (42)');
    await first.stop();
    const second = await startEmbeddedPostgres({ dataDir, port });
    started.push(second);
    expect(await query(second.url(), 'select v from kept')).toEqual([{ v: 42 }]);
    // No stop: the server is left running, as after a `kill -9` of the Node process.
  });

  it('recovers when a previous process died and left its server running', async () => {
    const again = await startEmbeddedPostgres({ dataDir, port });
    started.push(again);
    expect(await query(again.url(), 'select v from kept')).toEqual([{ v: 42 }]);
  });

  it('recovers from a stale postmaster.pid after the server itself was killed', async () => {
    const pid = Number(readFileSync(path.join(dataDir, 'postmaster.pid'), 'utf8').split('\n')[0]);
    process.kill(pid, 'SIGKILL');
    await waitFor(() => {
      try {
        process.kill(pid, 0);
        return false;
      } catch {
        return true; // gone
      }
    }, 'the killed server to be gone', 5_000);
    const recovered = await startEmbeddedPostgres({ dataDir, port });
    started.push(recovered);
    expect(await query(recovered.url(), 'select v from kept')).toEqual([{ v: 42 }]);
  });

  it('says clearly when its port is taken', async () => {
    const blocker = net.createServer();
    const blockedPort = await freePort();
    await new Promise<void>((resolve) => blocker.listen(blockedPort, '127.0.0.1', resolve));
    try {
      await expect(startEmbeddedPostgres({ dataDir: path.join(dir, 'other'), port: blockedPort })).rejects.toThrow(/Port \d+ .* is in use/);
    } finally {
      blocker.close();
    }
  });
});

describe('readiness follows the database', () => {
  it('answers 503 with db false when PostgreSQL goes away', async () => {
    const own = await startEmbeddedPostgres({ dataDir: path.join(dir, 'ready'), port: await freePort() });
    started.push(own);
    await ensureDatabase(own.url(), 'liya');
    const t = await startTestServer({ WORKER: '0' }, { databaseUrl: own.url('liya') });
    try {
      expect((await t.api.get('/health/ready')).status).toBe(200);
      await own.stop();
      const res = await t.api.get('/health/ready');
      expect(res.status).toBe(503);
      expect(res.body.success).toBe(false);
      expect(res.body.data).toEqual({ status: 'not_ready', engine: true, db: false });
      expect(res.body.error.code).toBe('NOT_READY');
      expect((await t.api.get('/health/live')).status).toBe(200);
    } finally {
      await t.close();
    }
  });
});

describe('a first start that did not finish', () => {
  it('initialises the data folder again when the previous initialisation was not synced to disk', async () => {
    const own = path.join(dir, 'interrupted');
    const ownPort = await freePort();
    const first = await startEmbeddedPostgres({ dataDir: own, port: ownPort });
    started.push(first);
    expect(existsSync(`${own}.initialising`)).toBe(false);
    await query(first.url(), 'create table from_the_first_start (v int)');
    await first.stop();
    // What a crash between initdb and the end of its sync leaves behind.
    writeFileSync(`${own}.initialising`, '1\n');
    const second = await startEmbeddedPostgres({ dataDir: own, port: ownPort });
    started.push(second);
    expect(existsSync(`${own}.initialising`)).toBe(false);
    expect(await query(second.url(), "select to_regclass('from_the_first_start') as t")).toEqual([{ t: null }]);
    expect(readFileSync(path.join(own, 'PG_VERSION'), 'utf8').trim()).toMatch(/^\d+$/);
  });
});
