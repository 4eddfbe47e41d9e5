// The `liya` CLI as a user runs it: a real subprocess (bin/liya.mjs) against a real server.
import { mkdtemp, rm, stat } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { bearer } from '../support/client.js';
import { ADMIN_SECRET, startTestServer, type TestServer } from '../support/server.js';
import { runLiya, type CliRunOptions } from '../support/cli.js';

const KEY = /svc_[A-Za-z0-9_-]{43}/;

let t: TestServer;
let configDir: string;



function liya(args: string[], options: CliRunOptions = {}) {
  const env = { LIYA_URL: t.url, LIYA_ADMIN_SECRET: ADMIN_SECRET, LIYA_CONFIG_DIR: configDir, LIYA_PASSWORD: undefined, ...options.env };
  return runLiya(args, { ...options, env });
}

const adminHeaders = { headers: { 'x-admin-secret': ADMIN_SECRET } };
const collections = (key: string) => t.api.get('/v1/collections', { headers: bearer(key) });

async function createTenantViaApi(name: string) {
  const res = await t.api.post('/admin/tenants', { tenantName: name }, adminHeaders);
  expect(res.status).toBe(201);
  return res.body.data as { tenant: { id: string }; apiKey: string };
}

beforeAll(async () => {
  t = await startTestServer();
  configDir = await mkdtemp(path.join(os.tmpdir(), 'liya-cli-'));
});

afterAll(async () => {
  await t?.close();
  if (configDir) await rm(configDir, { recursive: true, force: true });
});

describe('liya tenants', () => {
  let tenantId: string;
  let apiKey: string;

  it('create prints the key once, and the key works', async () => {
    const run = await liya(['tenants', 'create', '--name', 'CLI Acme', '--plan', 'starter', '--domains', 'hiring', '--request-quota', '1000']);
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    expect(run.stdout).toContain('Created tenant CLI Acme');
    expect(run.stdout).toMatch(/save it now/i);
    apiKey = run.stdout.match(KEY)![0];
    tenantId = run.stdout.match(/\(([0-9a-f-]{36})\)/)![1];
    expect((await collections(apiKey)).status).toBe(200);
  });

  it('list (table and --json) and show', async () => {
    const [json, table, show] = await Promise.all([
      liya(['tenants', 'list', '--json', '--limit', '100']),
      liya(['tenants', 'list']),
      liya(['tenants', 'show', tenantId]),
    ]);
    expect(json.code).toBe(0);
    const page = JSON.parse(json.stdout);
    expect(page.pagination).toMatchObject({ limit: 100, offset: 0 });
    expect(page.tenants.find((x: { id: string }) => x.id === tenantId)).toMatchObject({ tenantName: 'CLI Acme', billingPlan: 'starter', enabledDomains: ['hiring'] });

    expect(table.code).toBe(0);
    expect(table.stdout).toMatch(/ID\s+NAME\s+TYPE\s+PLAN/);
    expect(table.stdout.split('\n').find((l) => l.startsWith(tenantId))).toMatch(/CLI Acme\s+trial\s+starter\s+yes/);
    expect(table.stdout).toMatch(/Tenants 1-\d+ of \d+/);

    expect(show.code).toBe(0);
    expect(show.stdout).toMatch(/Plan\s+starter/);
    expect(show.stdout).toMatch(/Requests \(month\)\s+0 of 1000/);
    expect(show.stdout).not.toMatch(KEY); // a secret is printed only when it is issued
  });

  it('update changes the plan; bad input lists the issues by flag; no change is a usage error', async () => {
    const [update, invalid, nothing] = await Promise.all([
      liya(['tenants', 'update', tenantId, '--plan', 'pro', '--billing-email', 'billing@acme.test', '--token-quota', '5000']),
      liya(['tenants', 'update', tenantId, '--type', 'bogus', '--billing-email', 'not-an-email']),
      liya(['tenants', 'update', tenantId]),
    ]);
    expect(update.code).toBe(0);
    expect(update.stdout).toMatch(/Plan\s+pro/);
    const stored = await t.api.get(`/admin/tenants/${tenantId}`, adminHeaders);
    expect(stored.body.data).toMatchObject({ billingPlan: 'pro', billingEmail: 'billing@acme.test', monthlyTokenQuota: '5000' });

    expect(invalid.code).toBe(1);
    expect(invalid.stderr).toContain('INVALID_INPUT (HTTP 400)');
    expect(invalid.stderr).toContain('--type:');
    expect(invalid.stderr).toContain('--billing-email:');

    expect(nothing.code).toBe(2);
    expect(nothing.stderr).toContain('Nothing to update');
  });

  it('keys rotate: the old key stops working, the new one is printed and works', async () => {
    const run = await liya(['keys', 'rotate', '--tenant', tenantId]);
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/save it now/i);
    const newKey = run.stdout.match(KEY)![0];
    expect(newKey).not.toBe(apiKey);
    expect((await collections(apiKey)).status).toBe(401);
    expect((await collections(newKey)).status).toBe(200);
    apiKey = newKey;
  });

  it('deactivate: the key answers 403, update --active restores it', async () => {
    const run = await liya(['tenants', 'deactivate', tenantId]);
    expect(run.code).toBe(0);
    expect(run.stdout).toContain('Deactivated tenant CLI Acme');
    const res = await collections(apiKey);
    expect(res.status).toBe(403);
    expect(res.body.error.code).toBe('ACCOUNT_INACTIVE');

    const again = await liya(['tenants', 'update', tenantId, '--active', '--json']);
    expect(again.code).toBe(0);
    expect(JSON.parse(again.stdout)).toMatchObject({ id: tenantId, isActive: true });
    expect((await collections(apiKey)).status).toBe(200);
  });
});

describe('liya errors and health', () => {
  it('health, wrong and missing admin secret, unreachable server, bad flags', async () => {
    const [health, wrong, missing, unreachable, badFlag] = await Promise.all([
      liya(['health']),
      liya(['tenants', 'list'], { env: { LIYA_ADMIN_SECRET: 'wrong-secret-0123456789' } }),
      liya(['tenants', 'list'], { env: { LIYA_ADMIN_SECRET: undefined } }),
      liya(['health', '--url', 'http://127.0.0.1:1']),
      liya(['tenants', 'list', '--limit', 'many']),
    ]);
    expect(health.code).toBe(0);
    expect(health.stdout).toContain('is ready');
    expect(health.stdout).toContain('database: ok');
    expect(health.stdout).toContain('engine (job runner): ok');

    expect(wrong.code).toBe(1);
    expect(wrong.stderr).toContain('ADMIN_UNAUTHORIZED');
    expect(wrong.stderr).toContain('The admin secret is wrong');
    expect(wrong.stderr + wrong.stdout).not.toContain('wrong-secret-0123456789');
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain('ADMIN_UNAUTHORIZED');
    expect(missing.stderr).toContain('LIYA_ADMIN_SECRET');

    expect(unreachable.code).toBe(1);
    expect(unreachable.stderr).toContain('Cannot reach the Liya server at http://127.0.0.1:1');

    expect(badFlag.code).toBe(2);
    expect(badFlag.stderr).toContain("'--limit <n>' argument 'many' is invalid");
  });
});

describe('liya login and keys rotate --environment', () => {
  it('logs in, rotates one environment key, and refuses another tenant', async () => {
    const email = `cli-${randomBytes(4).toString('hex')}@example.test`;
    const password = 'correct horse battery';
    const signup = await t.api.post('/auth/signup', { companyName: 'CLI Signup Co', email, password });
    expect(signup.status).toBe(201);
    const { tenant, apiKey: productionKey } = signup.body.data as { tenant: { tenantId: string }; apiKey: string };
    const other = await createTenantViaApi('CLI Other');

    const [noPassword, notLoggedIn] = await Promise.all([
      liya(['login', '--email', email]),
      liya(['keys', 'rotate', '--tenant', tenant.tenantId, '--environment', 'production'], { env: { LIYA_CONFIG_DIR: path.join(configDir, 'nobody') } }),
    ]);
    expect(noPassword.code).toBe(2);
    expect(noPassword.stderr).toContain('LIYA_PASSWORD');
    expect(notLoggedIn.code).toBe(2);
    expect(notLoggedIn.stderr).toContain('needs a dashboard login');

    const login = await liya(['login', '--email', email, '--password', password]);
    expect(login.code).toBe(0);
    expect(login.stdout).toContain(`Logged in to ${t.url} as ${email}`);
    expect(login.stdout + login.stderr).not.toContain(password);
    const file = path.join(configDir, 'credentials.json');
    expect((await stat(file)).mode & 0o777).toBe(0o600);

    const [rotated, mismatch] = await Promise.all([
      liya(['keys', 'rotate', '--tenant', tenant.tenantId, '--environment', 'production']),
      liya(['keys', 'rotate', '--tenant', other.tenant.id, '--environment', 'production']),
    ]);
    expect(rotated.code).toBe(0);
    expect(rotated.stdout).toContain('Rotated the API key of environment production');
    const newKey = rotated.stdout.match(KEY)![0];
    expect((await collections(productionKey)).status).toBe(401);
    expect((await collections(newKey)).status).toBe(200);

    expect(mismatch.code).toBe(2);
    expect(mismatch.stderr).toContain('Tenant mismatch');
    expect(mismatch.stderr).toContain(other.tenant.id);
    expect((await collections(other.apiKey)).status).toBe(200);

    const logout = await liya(['logout']);
    expect(logout.code).toBe(0);
    expect(logout.stdout).toContain(`Logged out ${email}`);
    await expect(stat(file)).rejects.toThrow();
  });
});

describe('liya migrate and liya worker', () => {
  it('migrate builds an empty database; worker starts on it and stops on SIGTERM', async () => {
    const adminUrl = inject('pgAdminUrl');
    const name = `liya_cli_${randomBytes(6).toString('hex')}`;
    const admin = new pg.Client({ connectionString: adminUrl });
    await admin.connect();
    await admin.query(`create database ${name}`);
    await admin.end();
    const u = new URL(adminUrl);
    u.pathname = `/${name}`;
    const databaseUrl = u.toString();
    const env = { DATABASE_URL: databaseUrl, LOG_LEVEL: 'info' };

    const migrate = await liya(['migrate'], { env });
    expect(migrate.stderr).toBe('');
    expect(migrate.code).toBe(0);
    expect(migrate.stdout).toMatch(/Applied \d+ migrations?/);
    expect(migrate.stdout).toMatch(/Job queue schema: applied graphile-worker migrations 1-\d+/);
    expect(migrate.stdout).not.toContain(u.password || '\u0000'); // the database password is never printed

    const db = new pg.Client({ connectionString: databaseUrl });
    await db.connect();
    try {
      const { rows } = await db.query<{ name: string }>(
        `select table_schema || '.' || table_name as name from information_schema.tables where table_schema in ('public', 'graphile_worker')`,
      );
      const tables = rows.map((r) => r.name);
      expect(tables).toEqual(expect.arrayContaining(['public.tenants', 'public.api_keys', 'public.mikro_orm_migrations', 'graphile_worker.migrations']));

      const worker = liya(['worker'], { env, until: 'Liya worker running' });
      const started = await worker;
      expect(started.stdout).toContain('Liya worker running');
      const { rows: beats } = await db.query('select worker_id from worker_heartbeats');
      expect(beats.length).toBeGreaterThan(0);
      const exit = new Promise<number | null>((resolve) => worker.child!.on('close', resolve));
      worker.child!.kill('SIGTERM');
      expect(await exit).toBe(0);
      const { rows: after } = await db.query('select worker_id from worker_heartbeats');
      expect(after).toEqual([]);
    } finally {
      await db.end();
    }
  });
});
