// Log output: JSON or readable lines (LOG_FORMAT), health probes at debug, secrets redacted; from
// the logger factory, from a server in this process, and from a real `liya start` process. Lines
// written while serving a run carry its tenant and run; lines outside runs carry none.
import { PassThrough } from 'node:stream';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSqlPool } from '../db/sql-pool.js';
import { startServer, type RunningServer } from '../server/boot.js';
import { loadConfig } from '../server/config.js';
import { createLogger, resolveLogFormat } from '../server/logger.js';
import { withRunContext } from '../server/observability/telemetry.js';
import { bearer, createClient } from './support/client.js';
import { runLiya } from './support/cli.js';
import { startFakeLlm, type FakeLlm } from './support/fake-llm.js';
import { signupTenant } from './support/fixtures.js';
import { createTestDatabase, ADMIN_SECRET, JWT_SECRET } from './support/server.js';
import { waitFor } from './support/wait-for.js';
import { createWorkflow, MANUAL_TRIGGER } from './support/workflows.js';

interface LogLine {
  level: number;
  msg: string;
  reqId?: string;
  req?: { method: string; url: string };
  res?: { statusCode: number };
  [key: string]: unknown;
}

const DEBUG = 20;
const INFO = 30;

/** A stream that keeps what is written to it. */
function capture() {
  const stream = new PassThrough();
  let text = '';
  stream.on('data', (chunk: Buffer) => (text += chunk.toString()));
  return {
    stream,
    text: () => text,
    lines: () => text.split('\n').filter(Boolean),
    json: () => text.split('\n').filter(Boolean).map((line) => JSON.parse(line) as LogLine),
  };
}

const isJson = (line: string) => {
  try {
    JSON.parse(line);
    return true;
  } catch {
    return false;
  }
};

const baseConfig = (env: Record<string, string>) => loadConfig({ NODE_ENV: 'test', LOG_LEVEL: 'info', ...env });

describe('the logger factory', () => {
  it('LOG_FORMAT=json writes one JSON object a line', () => {
    const out = capture();
    const log = createLogger(baseConfig({ LOG_FORMAT: 'json' }), { destination: out.stream });
    log.info({ tenantId: 't1' }, 'tenant created');
    log.warn('disk almost full');
    const lines = out.json();
    expect(lines).toHaveLength(2);
    expect(lines[0]).toMatchObject({ level: INFO, msg: 'tenant created', tenantId: 't1' });
    expect(lines[1]).toMatchObject({ level: 40, msg: 'disk almost full' });
  });

  it('LOG_FORMAT=pretty writes readable lines, not JSON, with the level and the message', () => {
    const out = capture();
    const log = createLogger(baseConfig({ LOG_FORMAT: 'pretty' }), { destination: out.stream });
    log.info({ tenantId: 't1' }, 'tenant created');
    log.error('provider down');
    const lines = out.lines();
    expect(lines).toHaveLength(2);
    for (const line of lines) expect(isJson(line)).toBe(false);
    expect(lines[0]).toMatch(/INFO.*tenant created/);
    expect(lines[0]).toContain('t1');
    expect(lines[1]).toMatch(/ERROR.*provider down/);
  });

  it('LOG_FORMAT=auto (the default) is pretty on a terminal and JSON elsewhere', () => {
    expect(baseConfig({}).LOG_FORMAT).toBe('auto');
    expect(resolveLogFormat('auto', true)).toBe('pretty');
    expect(resolveLogFormat('auto', false)).toBe('json');
    expect(resolveLogFormat('auto', undefined)).toBe('json');
    expect(resolveLogFormat('json', true)).toBe('json');
    expect(resolveLogFormat('pretty', false)).toBe('pretty');
    const out = capture();
    createLogger(baseConfig({}), { destination: out.stream, isTTY: false }).info('piped');
    expect(out.json()[0]).toMatchObject({ msg: 'piped' });
    expect(() => baseConfig({ LOG_FORMAT: 'xml' })).toThrow(/LOG_FORMAT/);
  });

  it('secrets are redacted in both formats', () => {
    for (const LOG_FORMAT of ['json', 'pretty']) {
      const out = capture();
      const log = createLogger(baseConfig({ LOG_FORMAT }), { destination: out.stream });
      log.info(
        {
          req: { headers: { authorization: 'Bearer svc_secret-bearer', 'x-api-key': 'svc_secret-header', 'x-admin-secret': 'admin-secret-value', cookie: 'sid=cookie-value' } },
          config: { ADMIN_SECRET: 'admin-secret-value', OPENAI_API_KEY: 'sk-provider-secret', DATABASE_URL: 'postgres://u:db-password@h/liya' },
          user: { password: 'hunter2-password', apiKey: 'svc_secret-field', token: 'jwt-secret-token' },
        },
        'request with secrets',
      );
      const text = out.text();
      expect(text).toContain('request with secrets');
      expect(text).toContain('[redacted]');
      for (const secret of ['secret-bearer', 'secret-header', 'admin-secret-value', 'cookie-value', 'sk-provider-secret', 'db-password', 'hunter2', 'secret-field', 'jwt-secret-token']) {
        expect(text, `${LOG_FORMAT}: ${secret}`).not.toContain(secret);
      }
    }
  });
});

describe('request logs of a running server', () => {
  let databaseUrl: string;
  beforeAll(async () => {
    databaseUrl = await createTestDatabase();
  });

  async function startLogged(level: 'info' | 'debug') {
    const out = capture();
    const config = loadConfig({ NODE_ENV: 'test', PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: level, LOG_FORMAT: 'json', ADMIN_SECRET, JWT_SECRET, WORKER: '0', DB_POOL_MAX: '3' });
    const server: RunningServer = await startServer({ config, databaseUrl, log: createLogger(config, { destination: out.stream }) });
    return { server, out };
  }

  /** Sends a request with its own request id, so its log lines can be found. */
  async function send(server: RunningServer, path: string, id: string, headers: Record<string, string> = {}) {
    const res = await fetch(`${server.url}${path}`, { headers: { 'x-request-id': id, ...headers } });
    await res.arrayBuffer();
    return res.status;
  }

  it('at info: health probes are not logged, other requests are (incoming and completed), without secrets', async () => {
    const { server, out } = await startLogged('info');
    try {
      expect(await send(server, '/health/live', 'probe-live')).toBe(200);
      expect(await send(server, '/health/ready', 'probe-ready')).toBe(200);
      expect(await send(server, '/admin/stats', 'normal-request', { 'x-admin-secret': ADMIN_SECRET, authorization: 'Bearer svc_never-logged' })).toBe(200);
      const lines = await waitFor(() => {
        const all = out.json();
        return all.some((l) => l.reqId === 'normal-request' && l.msg === 'request completed') && all;
      }, 'the request log');
      expect(lines.filter((l) => l.reqId === 'probe-live' || l.reqId === 'probe-ready')).toEqual([]);
      const normal = lines.filter((l) => l.reqId === 'normal-request');
      expect(normal.map((l) => [l.level, l.msg])).toEqual([
        [INFO, 'incoming request'],
        [INFO, 'request completed'],
      ]);
      expect(normal[0].req).toMatchObject({ method: 'GET', url: '/admin/stats' });
      expect(normal[1].res).toEqual({ statusCode: 200 });
      expect(out.text()).not.toContain(ADMIN_SECRET);
      expect(out.text()).not.toContain('svc_never-logged');
      // A run callback's token (a single-use credential in its URL) is not logged either.
      const token = 'never-logged-callback-token.0.abc';
      const callback = await fetch(`${server.url}/webhooks/workflow-callbacks/${token}`, { method: 'POST', headers: { 'x-request-id': 'callback-request' } });
      await callback.arrayBuffer();
      const callbackLine = await waitFor(() => out.json().find((l) => l.reqId === 'callback-request' && l.msg === 'incoming request'), 'the callback request log');
      expect(callbackLine.req).toMatchObject({ method: 'POST', url: '/webhooks/workflow-callbacks/[redacted]' });
      expect(out.text()).not.toContain(token);
    } finally {
      await server.close();
    }
  });

  it('at debug: health probes are logged at debug, other requests still at info', async () => {
    const { server, out } = await startLogged('debug');
    try {
      expect(await send(server, '/health/live', 'probe-live')).toBe(200);
      expect(await send(server, '/health/ready', 'probe-ready')).toBe(200);
      expect(await send(server, '/openapi.json', 'normal-request')).toBe(200);
      const lines = await waitFor(() => {
        const all = out.json();
        return all.some((l) => l.reqId === 'normal-request' && l.msg === 'request completed') && all;
      }, 'the request log');
      for (const id of ['probe-live', 'probe-ready']) {
        expect(lines.filter((l) => l.reqId === id).map((l) => [l.level, l.msg]), id).toEqual([
          [DEBUG, 'incoming request'],
          [DEBUG, 'request completed'],
        ]);
      }
      expect(lines.find((l) => l.reqId === 'probe-live' && l.req)?.req).toMatchObject({ url: '/health/live' });
      expect(lines.filter((l) => l.reqId === 'normal-request').map((l) => l.level)).toEqual([INFO, INFO]);
    } finally {
      await server.close();
    }
  });
});

describe('log lines of runs', () => {
  let server: RunningServer;
  let fake: FakeLlm;
  const out = capture();
  beforeAll(async () => {
    fake = await startFakeLlm();
    const config = loadConfig({
      NODE_ENV: 'test', PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'info', LOG_FORMAT: 'json', ADMIN_SECRET, JWT_SECRET, WORKER: '0', DB_POOL_MAX: '3',
      OPENAI_BASE_URL: fake.url, OPENAI_API_KEY: 'sk-test', DEFAULT_MODEL: 'gpt-4o-mini', LLM_MAX_RETRIES: '0',
    });
    server = await startServer({ config, databaseUrl: await createTestDatabase(), log: createLogger(config, { destination: out.stream }) });
  });
  afterAll(async () => {
    await server?.close();
    await fake?.close();
  });

  it('every line written while serving a run carries tenant_id, run_id and run_kind; the lines around it carry none', async () => {
    const api = createClient(server.url);
    const tenant = await signupTenant(api, { companyName: 'Logged runs' });
    const auth = (id: string) => ({ headers: { ...bearer(tenant.apiKey), 'x-request-id': id } });

    // An intent run whose model call fails: the gateway's warn line is written inside the run.
    fake.fail(1, 500, { message: 'provider down' });
    const intent = await api.post('/v1/hiring/resume-analysis', { input: { user_id: 'u1', resume_text: 'Senior engineer, ten years of TypeScript and PostgreSQL.' } }, auth('intent-request'));
    expect(intent.status, intent.text).toBe(502);
    const warn = await waitFor(() => out.json().find((l) => l.level === 40 && l.provider === 'openai'), 'the provider warn line');
    expect(warn).toMatchObject({ tenant_id: tenant.tenantId, run_kind: 'intent', run_id: expect.stringMatching(/^[0-9a-f-]{36}$/) });

    // A workflow's log step: its line names the run it was written for.
    const workflow = await createWorkflow(api, tenant.apiKey, 'Logged', [MANUAL_TRIGGER, { id: 'say', step_type: 'action', action_id: 'log', config: { message: 'hello {{trigger.n}}' } }]);
    const run = await api.post(`/v1/workflows/${workflow.workflow_key}/run`, { input: { n: 1 } }, auth('workflow-request'));
    expect(run.status, run.text).toBe(200);
    const step = await waitFor(() => out.json().find((l) => l.msg === 'workflow log step' && l.workflow === workflow.workflow_key), 'the log step line');
    expect(step).toMatchObject({ tenant_id: tenant.tenantId, run_id: run.body.data.run_id, run_kind: 'workflow' });
    expect(step.run).toBe(run.body.data.run_id);

    // The requests' own lines are not the run's, and a later request on the same connection carries no stale run.
    await fetch(`${server.url}/openapi.json`, { headers: { 'x-request-id': 'later-request' } }).then((r) => r.arrayBuffer());
    const lines = await waitFor(() => {
      const all = out.json();
      return all.filter((l) => l.reqId === 'later-request').length === 2 && all;
    }, 'the later request\'s lines');
    const around = lines.filter((l) => ['intent-request', 'workflow-request', 'later-request'].includes(String(l.reqId)));
    expect(around.length).toBe(6);
    for (const line of around) {
      expect(line.run_id, `${line.reqId} ${line.msg}`).toBeUndefined();
      expect(line.tenant_id, `${line.reqId} ${line.msg}`).toBeUndefined();
    }
    // Tracing is off: no line carries a trace id.
    expect(lines.filter((l) => l.trace_id !== undefined)).toEqual([]);
  });
});

describe('lines outside runs', () => {
  it('a database connection opened while serving a run reports its later failure without that run', async () => {
    const out = capture();
    const log = createLogger(baseConfig({ LOG_FORMAT: 'json' }), { destination: out.stream });
    const url = await createTestDatabase();
    const sql = createSqlPool(url, 2, log);
    try {
      // The pool opens its connection inside the run; the connection outlives it.
      const pid = await withRunContext({ kind: 'workflow', tenantId: 'tenant-1', runId: 'run-1' }, async () => {
        log.info('inside the run');
        return (await sql.query<{ pid: number }>('select pg_backend_pid() as pid'))[0].pid;
      });
      const admin = new pg.Client({ connectionString: url });
      await admin.connect();
      await admin.query('select pg_terminate_backend($1)', [pid]);
      await admin.end();
      const failure = await waitFor(() => out.json().find((l) => l.msg === 'database pool error'), 'the pool error line');
      expect(failure.run_id).toBeUndefined();
      expect(failure.tenant_id).toBeUndefined();
      // The run's own line did carry it.
      expect(out.json().find((l) => l.msg === 'inside the run')).toMatchObject({ tenant_id: 'tenant-1', run_id: 'run-1', run_kind: 'workflow' });
    } finally {
      await sql.end();
    }
  });
});

describe('a real `liya start` process', () => {
  const started: ReturnType<typeof runLiya>[] = [];
  afterAll(async () => {
    for (const run of started) {
      if (run.child.exitCode === null) run.child.kill('SIGTERM');
      await run;
    }
  });

  async function start(LOG_FORMAT: string) {
    const env = {
      DATABASE_URL: await createTestDatabase(),
      PORT: '0',
      HOST: '127.0.0.1',
      NODE_ENV: 'test',
      LOG_LEVEL: 'info',
      LOG_FORMAT,
      WORKER: '0',
      DB_POOL_MAX: '3',
      ADMIN_SECRET,
      JWT_SECRET,
    };
    const run = runLiya(['start'], { env });
    started.push(run);
    let stdout = '';
    run.child.stdout!.on('data', (d: Buffer) => (stdout += d.toString()));
    const url = await waitFor(() => stdout.match(/listening on (http:\/\/127\.0\.0\.1:\d+)/)?.[1], 'the server to listen', 60_000);
    return { url, stdout: () => stdout, run };
  }

  it('LOG_FORMAT=json: every stdout line is JSON; probes stay out of the info log, other requests are in it', async () => {
    const server = await start('json');
    await fetch(`${server.url}/health/live`, { headers: { 'x-request-id': 'probe-live' } }).then((r) => r.arrayBuffer());
    await fetch(`${server.url}/admin/stats`, { headers: { 'x-request-id': 'normal-request', 'x-admin-secret': ADMIN_SECRET } }).then((r) => r.arrayBuffer());
    await waitFor(() => server.stdout().includes('"reqId":"normal-request","res"'), 'the request log');
    const lines = server.stdout().split('\n').filter(Boolean);
    for (const line of lines) expect(isJson(line), line).toBe(true);
    const parsed = lines.map((l) => JSON.parse(l) as LogLine);
    expect(parsed.some((l) => l.msg.startsWith('Liya API listening on'))).toBe(true);
    expect(parsed.filter((l) => l.reqId === 'probe-live')).toEqual([]);
    expect(parsed.filter((l) => l.reqId === 'normal-request').map((l) => [l.level, l.msg])).toEqual([
      [INFO, 'incoming request'],
      [INFO, 'request completed'],
    ]);
    expect(server.stdout()).not.toContain(ADMIN_SECRET);
  });

  it('LOG_FORMAT=pretty: readable lines with the level and message, not JSON', async () => {
    const server = await start('pretty');
    await fetch(`${server.url}/openapi.json`, { headers: { 'x-request-id': 'normal-request' } }).then((r) => r.arrayBuffer());
    await waitFor(() => /request completed/.test(server.stdout()), 'the request log');
    const lines = server.stdout().split('\n').filter(Boolean);
    for (const line of lines) expect(isJson(line), line).toBe(false);
    expect(lines.find((l) => l.includes('Liya API listening on'))).toMatch(/INFO.*Liya API listening on http:\/\/127\.0\.0\.1:\d+/);
    expect(lines.find((l) => l.includes('incoming request'))).toMatch(/INFO.*incoming request.*normal-request.*\/openapi\.json/);
  });
});
