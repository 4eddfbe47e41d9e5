// GET /admin/diagnostics over real HTTP, and `liya doctor` (a real subprocess) against it.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runLiya, type CliRunOptions } from '../support/cli.js';
import { startFakeLlm, type FakeLlm } from '../support/fake-llm.js';
import { adminHeaders } from '../support/fixtures.js';
import { freePort } from '../support/free-port.js';
import { ADMIN_SECRET, startTestServer, type TestServer } from '../support/server.js';

const PROVIDER_KEY = 'sk-doctor-test-key';
const CHECK_NAMES = ['database', 'migrations', 'job runner', 'model provider', 'provider breakers', 'optional features'];

interface Check {
  name: string;
  status: 'ok' | 'warn' | 'fail';
  detail: string;
  fix: string | null;
}

let fake: FakeLlm;
let healthy: TestServer;
let noProvider: TestServer;
let closedPort: number;

beforeAll(async () => {
  fake = await startFakeLlm();
  closedPort = await freePort();
  [healthy, noProvider] = await Promise.all([
    startTestServer({ OPENAI_BASE_URL: fake.url, OPENAI_API_KEY: PROVIDER_KEY }),
    startTestServer({ OPENAI_BASE_URL: `http://127.0.0.1:${closedPort}/v1`, OPENAI_API_KEY: PROVIDER_KEY }),
  ]);
});

afterAll(async () => {
  await Promise.all([healthy?.close(), noProvider?.close()]);
  await fake?.close();
});

async function diagnose(t: TestServer) {
  const res = await t.api.get('/admin/diagnostics', { headers: adminHeaders });
  expect(res.status, res.text).toBe(200);
  expect(res.body.success).toBe(true);
  return res.body.data as { ok: boolean; checks: Check[] };
}

const byName = (checks: Check[]) => Object.fromEntries(checks.map((c) => [c.name, c]));

describe('GET /admin/diagnostics', () => {
  it('every check is ok against a healthy server, and the provider is asked for its models with the key', async () => {
    fake.reset();
    const data = await diagnose(healthy);
    expect(data.checks.map((c) => c.name)).toEqual(CHECK_NAMES);
    for (const check of data.checks) {
      expect(check, JSON.stringify(check)).toMatchObject({ status: 'ok', fix: null });
      expect(check.detail).toEqual(expect.any(String));
    }
    expect(data.ok).toBe(true);
    const checks = byName(data.checks);
    expect(checks.database.detail).toMatch(/PostgreSQL/);
    expect(checks.migrations.detail).toMatch(/all \d+ applied/);
    expect(checks['job runner'].detail).toMatch(/alive/);
    expect(checks['model provider'].detail).toContain(fake.url.replace(/\/+$/, ''));
    const listed = fake.requests.filter((r) => r.method === 'GET' && r.path === '/v1/models');
    expect(listed).toHaveLength(1);
    expect(listed[0].headers.authorization).toBe(`Bearer ${PROVIDER_KEY}`);
    expect(JSON.stringify(data)).not.toContain(PROVIDER_KEY);
  });

  it('an unreachable provider fails its check with a fix; the other checks stay ok', async () => {
    const data = await diagnose(noProvider);
    expect(data.ok).toBe(false);
    const checks = byName(data.checks);
    expect(checks['model provider']).toMatchObject({ status: 'fail', detail: expect.stringMatching(/cannot connect|no answer/) });
    expect(checks['model provider'].fix).toContain('OPENAI_BASE_URL');
    for (const name of ['database', 'migrations', 'job runner']) expect(checks[name].status).toBe('ok');
  });

  it('a provider that refuses the key fails with a fix naming OPENAI_API_KEY', async () => {
    fake.fail(1, 401);
    const checks = byName((await diagnose(healthy)).checks);
    expect(checks['model provider']).toMatchObject({ status: 'fail', detail: expect.stringContaining('HTTP 401') });
    expect(checks['model provider'].fix).toContain('OPENAI_API_KEY');
  });

  it('a missing or wrong admin secret is 401 ADMIN_UNAUTHORIZED in the envelope', async () => {
    for (const headers of [undefined, { 'x-admin-secret': 'not-the-admin-secret-at-all' }]) {
      const res = await healthy.api.get('/admin/diagnostics', { headers });
      expect(res.status).toBe(401);
      expect(res.body).toEqual({ success: false, error: { code: 'ADMIN_UNAUTHORIZED', message: expect.any(String) } });
    }
  });

  it('is documented in the OpenAPI document with its response schema and admin security', async () => {
    const doc = (await healthy.api.get('/openapi.json')).body;
    const operation = doc.paths['/admin/diagnostics']?.get;
    expect(operation).toBeDefined();
    expect(JSON.stringify(operation.responses['200'])).toMatch(/checks/);
    expect(JSON.stringify(operation.responses['401'] ?? {})).not.toBe('{}');
  });

  it('without a job runner and with a migration not applied, both checks fail with their fixes', async () => {
    const t = await startTestServer({ WORKER: '0', OPENAI_BASE_URL: fake.url });
    try {
      const [latest] = await t.sql<{ name: string }>('select name from mikro_orm_migrations order by id desc limit 1');
      await t.sql('delete from mikro_orm_migrations where name = $1', [latest.name]);
      const data = await diagnose(t);
      expect(data.ok).toBe(false);
      const checks = byName(data.checks);
      expect(checks.migrations).toMatchObject({ status: 'fail', fix: expect.stringContaining('liya migrate') });
      expect(checks.migrations.detail).toContain(latest.name.replace(/\.(ts|js)$/, ''));
      expect(checks['job runner']).toMatchObject({ status: 'fail', fix: expect.stringContaining('liya worker') });
      expect(checks['job runner'].fix).toContain('WORKER=1');
      expect(checks.database.status).toBe('ok');
    } finally {
      await t.close();
    }
  });
});

describe('liya doctor', () => {
  const liya = (t: TestServer | string, args: string[], options: CliRunOptions = {}) =>
    runLiya(['doctor', ...args], { ...options, env: { LIYA_URL: typeof t === 'string' ? t : t.url, LIYA_ADMIN_SECRET: ADMIN_SECRET, ...options.env } });

  it('lists every check and exits 0 when all are ok; --json gives the same checks', async () => {
    const [text, json] = await Promise.all([liya(healthy, []), liya(healthy, ['--json'])]);
    expect(text.stderr).toBe('');
    expect(text.code).toBe(0);
    for (const name of ['server', ...CHECK_NAMES]) expect(text.stdout).toMatch(new RegExp(`✔ ${name}: `));
    expect(text.stdout).toContain('All 7 checks passed');

    expect(json.code).toBe(0);
    const report = JSON.parse(json.stdout);
    expect(report).toMatchObject({ ok: true, url: healthy.url });
    expect(report.checks.map((c: Check) => c.name)).toEqual(['server', ...CHECK_NAMES]);
  });

  it('a failing provider: exit 1, the failure and its fix are printed', async () => {
    const run = await liya(noProvider, []);
    expect(run.code).toBe(1);
    expect(run.stdout).toMatch(/✖ model provider: /);
    expect(run.stdout).toMatch(/fix: Check OPENAI_BASE_URL/);
    expect(run.stdout).toMatch(/✔ database: /);
    expect(run.stdout).toContain('1 of 7 checks failed');
  });

  it('a warning is not a pass: the summary counts it apart, exit 0', async () => {
    const unlisted = await startTestServer({ OPENAI_BASE_URL: fake.url, OPENAI_API_KEY: PROVIDER_KEY, DEFAULT_MODEL: 'model-the-provider-does-not-list' });
    try {
      const run = await liya(unlisted, []);
      expect(run.code).toBe(0);
      expect(run.stdout).toMatch(/! model provider: .*does not list DEFAULT_MODEL/);
      expect(run.stdout).toContain('6 of 7 checks passed, 1 warning');
      expect(run.stdout).not.toContain('All 7 checks passed');
    } finally {
      await unlisted.close();
    }
  });

  it('an unreachable server is a failed check with the fix to start it: exit 1', async () => {
    const [text, json] = await Promise.all([liya(`http://127.0.0.1:${closedPort}`, []), liya(`http://127.0.0.1:${closedPort}`, ['--json'])]);
    expect(text.code).toBe(1);
    expect(text.stdout).toMatch(/✖ server: cannot reach/);
    expect(text.stdout).toContain('fix: Start it: liya start');
    expect(json.code).toBe(1);
    expect(JSON.parse(json.stdout)).toMatchObject({ ok: false, checks: [{ name: 'server', status: 'fail' }] });
  });

  it('a wrong admin secret is a failed check that says how to pass the right one: exit 1', async () => {
    const run = await liya(healthy, [], { env: { LIYA_ADMIN_SECRET: 'not-the-admin-secret-at-all' } });
    expect(run.code).toBe(1);
    expect(run.stdout).toMatch(/✖ admin access: ADMIN_UNAUTHORIZED/);
    expect(run.stdout).toContain('--admin-secret');
  });
});
