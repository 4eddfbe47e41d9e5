// The two routes anyone can reach: run callbacks (POST /webhooks/workflow-callbacks/<token>) and
// webhook deliveries (POST /webhooks/workflows/<slug>). Each checks its credential (the token; the
// slug and the signature headers) before it reads a byte of the body, so large bodies with a bad
// credential cost nothing; run callbacks sent by us cannot be replayed as webhook deliveries; and
// a callback token stays out of the logs however its path is percent-encoded.
import { createHmac, randomBytes } from 'node:crypto';
import http from 'node:http';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { PassThrough } from 'node:stream';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, type RunningServer } from '../../server/boot.js';
import { loadConfig } from '../../server/config.js';
import { createLogger } from '../../server/logger.js';
import { bearer, createClient, type ApiClient } from '../support/client.js';
import { signupTenant, type SignedUpTenant } from '../support/fixtures.js';
import { answeredDuring } from '../support/health-watch.js';
import { ADMIN_SECRET, JWT_SECRET, createTestDatabase } from '../support/server.js';
import { waitFor } from '../support/wait-for.js';
import { MANUAL_TRIGGER, createWorkflow } from '../support/workflows.js';

let server: RunningServer;
let api: ApiClient;
let a: SignedUpTenant;
let web: http.Server;
let webUrl: string;
let logText = '';

const BIG = 24_500_000;
/** One 24.5 MB JSON body, shared by every large request. */
const bigBody = Buffer.concat([Buffer.from('{"pad":"'), Buffer.alloc(BIG - 10, 'a'), Buffer.from('"}')]);

const auth = () => ({ headers: bearer(a.apiKey) });
/** Callback URLs the runs posted to the local web service (/register), newest last. */
const registered: string[] = [];
/** Run callbacks delivered to the local web service (/cb/...), by path. */
const delivered = new Map<string, { headers: http.IncomingHttpHeaders; body: string }[]>();

beforeAll(async () => {
  web = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      if (req.url === '/register') registered.push((JSON.parse(body) as { callback: string }).callback);
      if (req.url?.startsWith('/cb/')) delivered.set(req.url, [...(delivered.get(req.url) ?? []), { headers: req.headers, body }]);
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}');
    });
  });
  await new Promise<void>((r) => web.listen(0, '127.0.0.1', r));
  webUrl = `http://127.0.0.1:${(web.address() as AddressInfo).port}`;

  const logs = new PassThrough();
  logs.on('data', (chunk: Buffer) => (logText += chunk.toString()));
  const config = loadConfig({
    NODE_ENV: 'test', PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'info', LOG_FORMAT: 'json', ADMIN_SECRET, JWT_SECRET,
    WORKER_CONCURRENCY: '2', DB_POOL_MAX: '5', OUTBOUND_ALLOWED_HOSTS: '127.0.0.1',
  });
  server = await startServer({ config, databaseUrl: await createTestDatabase(), log: createLogger(config, { destination: logs }) });
  api = createClient(server.url);
  a = await signupTenant(api, { companyName: 'Unauthenticated routes' });
});

afterAll(async () => {
  await server?.close();
  await new Promise((r) => web?.close(r));
});

/** A run waiting at a wait_for_callback step, and the path of its callback URL. */
async function waitingRun(name: string) {
  const wf = await createWorkflow(api, a.apiKey, name, [
    MANUAL_TRIGGER,
    { id: 'send', step_type: 'action', action_id: 'http_request', config: { method: 'POST', url: `${webUrl}/register`, body: { callback: '{{run.callback_url}}' } } },
    { id: 'wait', step_type: 'action', action_id: 'wait_for_callback', config: {} },
    { id: 'done', step_type: 'end', config: { output: '{{steps.wait.output}}' } },
  ]);
  const before = registered.length;
  const started = await api.post(`/v1/workflows/${wf.workflow_key}/run`, { input: {} }, auth());
  expect(started.body.data?.status, started.text).toBe('waiting');
  expect(registered.length).toBe(before + 1);
  const path = new URL(registered.at(-1)!).pathname;
  return { workflowKey: wf.workflow_key, runId: started.body.data.run_id as string, path, token: path.split('/').at(-1)! };
}

const runStatus = async (workflowKey: string, runId: string) => (await api.get(`/v1/workflows/${workflowKey}/runs/${runId}`, auth())).body.data.run.status as string;
const runTotal = async (workflowKey: string) => (await api.get(`/v1/workflows/${workflowKey}/runs?pageSize=100`, auth())).body.data.pagination.total as number;

interface RawAnswer {
  status: number;
  body: { success: boolean; error?: { code: string } };
}

/**
 * Declares a body of `declared` bytes but sends only the first `sent`: an answer can only come
 * from a route that decided without reading the body. null when none came within `timeoutMs`.
 */
function partialPost(path: string, headers: Record<string, string>, declared = BIG, sent = 1024, timeoutMs = 5000): Promise<RawAnswer | null> {
  const { port } = new URL(server.url);
  return new Promise((resolve) => {
    const socket = net.connect(Number(port), '127.0.0.1');
    let data = Buffer.alloc(0);
    const finish = (answer: RawAnswer | null) => {
      clearTimeout(timer);
      socket.destroy();
      resolve(answer);
    };
    const timer = setTimeout(() => finish(null), timeoutMs);
    socket.on('data', (chunk: Buffer) => {
      data = Buffer.concat([data, chunk]);
      const end = data.indexOf('\r\n\r\n');
      if (end < 0) return;
      const head = data.subarray(0, end).toString();
      const length = Number(/content-length:\s*(\d+)/i.exec(head)?.[1] ?? 0);
      if (data.length - end - 4 < length) return;
      finish({ status: Number(head.split(' ')[1]), body: JSON.parse(data.subarray(end + 4, end + 4 + length).toString()) });
    });
    socket.on('error', () => finish(null));
    const lines = [`POST ${path} HTTP/1.1`, 'host: 127.0.0.1', 'content-type: application/json', `content-length: ${declared}`, ...Object.entries(headers).map(([k, v]) => `${k}: ${v}`)];
    socket.write(`${lines.join('\r\n')}\r\n\r\n`);
    socket.write(Buffer.alloc(sent, 'a'));
  });
}

/**
 * POSTs a whole body: the answer's status and error code, once the answer is in and the upload has
 * ended (the server may answer first, and then close the connection or let the rest arrive).
 */
function postBody(path: string, body: Buffer, headers: Record<string, string> = {}, chunked = false): Promise<{ status: number; code?: string }> {
  const { port } = new URL(server.url);
  return new Promise((resolve, reject) => {
    let answer: { status: number; code?: string } | null = null;
    let uploaded = false;
    const done = () => {
      if (!answer || !uploaded) return false;
      resolve(answer);
      return true;
    };
    const req = http.request(
      { host: '127.0.0.1', port: Number(port), path, method: 'POST', headers: { 'content-type': 'application/json', ...(chunked ? {} : { 'content-length': String(body.length) }), ...headers } },
      (res) => {
        let text = '';
        res.on('data', (c: Buffer) => (text += c.toString()));
        res.on('end', () => {
          answer = { status: res.statusCode!, code: text ? (JSON.parse(text) as { error?: { code: string } }).error?.code : undefined };
          done();
        });
      },
    );
    req.on('finish', () => {
      uploaded = true;
      done();
    });
    req.on('error', (err) => {
      uploaded = true;
      if (!done()) setTimeout(() => (answer ? resolve(answer) : reject(err)), 100);
    });
    if (chunked) {
      for (let at = 0; at < body.length; at += 256 * 1024) req.write(body.subarray(at, at + 256 * 1024));
      req.end();
    } else {
      req.end(body);
    }
  });
}

const forgedToken = () => `${randomBytes(16).toString('base64url')}.0.${randomBytes(24).toString('base64url')}`;
const wrongMac = (token: string) => token.replace(/.{4}$/, (tail) => (tail === 'AAAA' ? 'BBBB' : 'AAAA'));

/** Standard Webhooks headers for `body`, signed with `secret`. */
function signed(secret: string, body: string, id = `msg_${randomBytes(6).toString('hex')}`, at = new Date()) {
  return { 'webhook-id': id, 'webhook-timestamp': String(Math.floor(at.getTime() / 1000)), 'webhook-signature': new Webhook(secret).sign(id, at, body) };
}

/** The documented derivation of the key that signs run callbacks from a workflow's webhook secret. */
const callbackSecretOf = (webhookSecret: string) =>
  `whsec_${createHmac('sha256', Buffer.from(webhookSecret.slice('whsec_'.length), 'base64')).update('liya/run-callback/v1').digest('base64')}`;

describe('run callbacks check the token before reading the body', () => {
  it('bad tokens with 24.5 MB bodies are answered 404 without reading them; health stays fast', async () => {
    const waiting = await waitingRun('Callback abuse');
    const tokens = ['not-a-token', 'x'.repeat(200), forgedToken(), forgedToken(), forgedToken(), wrongMac(waiting.token), wrongMac(waiting.token), wrongMac(waiting.token)];
    const health = await answeredDuring(server.url, () => Promise.all(tokens.map((token) => postBody(`/webhooks/workflow-callbacks/${token}`, bigBody))));
    const answers = health.result;
    console.log(`8 parallel 24.5 MB callbacks with bad tokens: ${health.answeredDuring} health probes answered meanwhile, ${health.failures} failed`);
    // Nothing but the headers arrived, and the answer is there.
    const early = await Promise.all(['not-a-token', forgedToken(), wrongMac(waiting.token)].map((token) => partialPost(`/webhooks/workflow-callbacks/${token}`, {})));
    console.log(`answers with 1 KB of a declared 24.5 MB sent: ${early.map((x) => x?.status ?? 'none within 5 s').join(', ')}`);
    expect(answers).toEqual(tokens.map(() => ({ status: 404, code: 'NOT_FOUND' })));
    expect(health.failures).toBe(0);
    for (const answer of early) expect(answer).toEqual({ status: 404, body: expect.objectContaining({ success: false, error: expect.objectContaining({ code: 'NOT_FOUND' }) }) });

    // The run still waits, and its real token still works.
    expect(await runStatus(waiting.workflowKey, waiting.runId)).toBe('waiting');
    const real = await api.post(waiting.path, { verdict: 'pass' });
    expect(real.status, real.text).toBe(202);
  }, 120_000);

  it('a callback body over 1 MiB is 413 PAYLOAD_TOO_LARGE (declared or streamed); the wait goes on', async () => {
    const waiting = await waitingRun('Callback size');
    const over = Buffer.concat([Buffer.from('{"pad":"'), Buffer.alloc(1024 * 1024, 'a'), Buffer.from('"}')]);
    expect(await postBody(waiting.path, over)).toEqual({ status: 413, code: 'PAYLOAD_TOO_LARGE' });
    expect(await postBody(waiting.path, over, {}, true)).toEqual({ status: 413, code: 'PAYLOAD_TOO_LARGE' });
    // Declared too large: refused before the body arrives.
    expect(await partialPost(waiting.path, {}, 2 * 1024 * 1024)).toMatchObject({ status: 413, body: { error: { code: 'PAYLOAD_TOO_LARGE' } } });
    expect(await runStatus(waiting.workflowKey, waiting.runId)).toBe('waiting');
    const under = JSON.stringify({ pad: 'b'.repeat(1024 * 1024 - 100) });
    const ok = await api.post(waiting.path, undefined, { raw: under, contentType: 'application/json' });
    expect(ok.status, ok.text).toBe(202);
    await waitFor(async () => (await runStatus(waiting.workflowKey, waiting.runId)) === 'completed', 'the run to complete');
  });
});

describe('webhook deliveries check the slug and the signature headers before reading the body', () => {
  it('unknown slugs are 404 and malformed or stale signature headers 401, without reading the body; health stays fast', async () => {
    const wf = await createWorkflow(api, a.apiKey, 'Webhook abuse', [{ id: 't', step_type: 'trigger', config: { trigger_subtype: 'webhook' } }, { id: 'done', step_type: 'end', config: { output: 1 } }]);
    const dep = await api.get(`/v1/workflows/${wf.workflow_key}`, auth());
    const slug = dep.body.data.workflow.trigger_config.slug as string;
    const path = `/webhooks/workflows/${slug}`;
    const now = Math.floor(Date.now() / 1000);
    const sig = `v1,${randomBytes(32).toString('base64')}`;
    const good = { 'webhook-id': 'msg_1', 'webhook-timestamp': String(now), 'webhook-signature': sig };

    const bad: [string, Record<string, string>][] = [
      ['no headers', {}],
      ['no webhook-id', { 'webhook-timestamp': String(now), 'webhook-signature': sig }],
      ['empty webhook-id', { ...good, 'webhook-id': '' }],
      ['no timestamp', { 'webhook-id': 'msg_1', 'webhook-signature': sig }],
      ['timestamp not a number', { ...good, 'webhook-timestamp': 'yesterday' }],
      ['timestamp in milliseconds', { ...good, 'webhook-timestamp': String(Date.now()) }],
      ['timestamp 6 minutes old', { ...good, 'webhook-timestamp': String(now - 360) }],
      ['timestamp 6 minutes ahead', { ...good, 'webhook-timestamp': String(now + 360) }],
      ['no signature', { 'webhook-id': 'msg_1', 'webhook-timestamp': String(now) }],
      ['signature without version', { ...good, 'webhook-signature': randomBytes(32).toString('base64') }],
      ['signature of another version only', { ...good, 'webhook-signature': `v2,${randomBytes(32).toString('base64')}` }],
      ['signature not base64', { ...good, 'webhook-signature': 'v1,not base64!' }],
      ['signature empty', { ...good, 'webhook-signature': 'v1,' }],
    ];
    const health = await answeredDuring(server.url, () =>
      Promise.all(
      [
        ...bad.slice(0, 6).map(([, headers]) => ({ path, headers })),
        { path: '/webhooks/workflows/no-such-slug', headers: good },
        { path: '/webhooks/workflows/other-unknown-slug', headers: good },
      ].map((r) => postBody(r.path, bigBody, r.headers)),
      ),
    );
    const answers = health.result;
    console.log(`8 parallel 24.5 MB webhook deliveries with bad headers or slugs: ${health.answeredDuring} health probes answered meanwhile, ${health.failures} failed`);
    expect(answers.map((x) => x.status)).toEqual([401, 401, 401, 401, 401, 401, 404, 404]);
    expect(health.failures).toBe(0);

    // Nothing but the headers arrived, and the answer is there.
    const unknown = await partialPost('/webhooks/workflows/no-such-slug', good);
    expect(unknown).toMatchObject({ status: 404, body: { error: { code: 'NOT_FOUND' } } });
    for (const [what, headers] of bad) {
      const answer = await partialPost(path, headers);
      expect(answer, what).toMatchObject({ status: 401, body: { success: false, error: { code: 'INVALID_SIGNATURE' } } });
    }
    expect(await runTotal(wf.workflow_key)).toBe(0);

    // A delivery that passes the checks is read and verified as before.
    const body = JSON.stringify({ hello: 'world' });
    const accepted = await api.post(path, undefined, { raw: body, contentType: 'application/json', headers: signed(wf.webhook_secret!, body) });
    expect(accepted.status, accepted.text).toBe(202);
    const wrong = await api.post(path, undefined, { raw: body, contentType: 'application/json', headers: { ...good, 'webhook-signature': `${sig} ${sig}` } });
    expect(wrong.status, wrong.text).toBe(401);
    expect(await runTotal(wf.workflow_key)).toBe(1);
  }, 120_000);
});

describe('run callbacks are signed with a key derived from the webhook secret', () => {
  it('a delivered run callback re-posted to the webhook URL is 401 and starts no run', async () => {
    const created = await api.post('/v1/workflows', { name: 'Replayed callback', steps: [{ id: 't', step_type: 'trigger', config: { trigger_subtype: 'webhook' } }, { id: 'done', step_type: 'end', config: { output: 'hooked' } }] }, auth());
    const workflowKey = created.body.data.workflow.workflow_key as string;
    const dep = await api.post(`/v1/workflows/${workflowKey}/deploy`, undefined, auth());
    expect(dep.status, dep.text).toBe(200);
    const { webhook_url: webhookUrl, webhook_secret: webhookSecret } = dep.body.data as { webhook_url: string; webhook_secret: string };

    const res = await api.post(`/v1/workflows/${workflowKey}/run`, { input: {}, mode: 'async', callback_url: `${webUrl}/cb/replay` }, auth());
    expect(res.status, res.text).toBe(202);
    await waitFor(() => (delivered.get('/cb/replay') ?? []).length > 0, 'the run callback');
    const [callback] = delivered.get('/cb/replay')!;
    const headers = { 'webhook-id': String(callback.headers['webhook-id']), 'webhook-timestamp': String(callback.headers['webhook-timestamp']), 'webhook-signature': String(callback.headers['webhook-signature']) };

    const replay = await api.post(new URL(webhookUrl).pathname, undefined, { raw: callback.body, contentType: 'application/json', headers });
    expect(replay.status, replay.text).toBe(401);
    expect(replay.body.error.code).toBe('INVALID_SIGNATURE');
    expect(await runTotal(workflowKey)).toBe(1);

    // Receivers verify with the callback secret shown beside the webhook secret (or derive it).
    const callbackSecret = dep.body.data.callback_secret as string;
    expect(callbackSecret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(callbackSecret).toBe(callbackSecretOf(webhookSecret));
    expect(new Webhook(callbackSecret).verify(callback.body, headers)).toMatchObject({ type: 'workflow.run.completed', data: { output: 'hooked' } });
    expect(() => new Webhook(webhookSecret).verify(callback.body, headers)).toThrow();

    // A rotation shows the new pair.
    const rotated = await api.post(`/v1/workflows/${workflowKey}/webhook-secret/rotate`, { grace_period_seconds: 0 }, auth());
    expect(rotated.status, rotated.text).toBe(200);
    expect(rotated.body.data.callback_secret).toBe(callbackSecretOf(rotated.body.data.webhook_secret));
    const after = await api.post(`/v1/workflows/${workflowKey}/run`, { input: {}, mode: 'async', callback_url: `${webUrl}/cb/rotated` }, auth());
    expect(after.status, after.text).toBe(202);
    await waitFor(() => (delivered.get('/cb/rotated') ?? []).length > 0, 'the callback after the rotation');
    const [second] = delivered.get('/cb/rotated')!;
    expect(() => new Webhook(rotated.body.data.callback_secret).verify(second.body, second.headers as Record<string, string>)).not.toThrow();
  });

  it('the first async run of a manual workflow shows both secrets it minted', async () => {
    const wf = await createWorkflow(api, a.apiKey, 'Minted on first callback', [MANUAL_TRIGGER, { id: 'done', step_type: 'end', config: { output: 7 } }]);
    const res = await api.post(`/v1/workflows/${wf.workflow_key}/run`, { input: {}, mode: 'async', callback_url: `${webUrl}/cb/minted` }, auth());
    expect(res.status, res.text).toBe(202);
    expect(res.body.data).toEqual({ run_id: expect.any(String), status: 'running', webhook_secret: expect.stringMatching(/^whsec_/), callback_secret: expect.stringMatching(/^whsec_/) });
    expect(res.body.data.callback_secret).toBe(callbackSecretOf(res.body.data.webhook_secret));
    await waitFor(() => (delivered.get('/cb/minted') ?? []).length > 0, 'the run callback');
    const [callback] = delivered.get('/cb/minted')!;
    expect(new Webhook(res.body.data.callback_secret).verify(callback.body, callback.headers as Record<string, string>)).toMatchObject({ data: { output: 7 } });
  });
});

describe('callback tokens stay out of the logs', () => {
  it('however the path is percent-encoded, in every line', async () => {
    const waiting = await waitingRun('Logged callback');
    const { token } = waiting;
    const encodedFirst = `%${token.charCodeAt(0).toString(16).toUpperCase()}${token.slice(1)}`;
    const requests: { id: string; method: string; path: string; body?: Buffer; status: number }[] = [
      { id: 'cb-encoded-w', method: 'POST', path: `/%77ebhooks/workflow-callbacks/${token}`, body: Buffer.from('{"verdict":"pass"}'), status: 202 },
      { id: 'cb-encoded-again', method: 'POST', path: `/%77ebhooks/workflow-callbacks/${token}`, body: Buffer.from('{}'), status: 409 },
      { id: 'cb-encoded-dash', method: 'POST', path: `/webhooks/workflow%2Dcallbacks/${token}`, body: Buffer.from('{}'), status: 409 },
      { id: 'cb-encoded-lower', method: 'POST', path: `/webhooks/workflow%2dcallbacks%2F${token}`, body: Buffer.from('{}'), status: 404 },
      { id: 'cb-encoded-token', method: 'POST', path: `/webhooks/workflow-callbacks/${encodedFirst}`, body: Buffer.from('{}'), status: 409 },
      { id: 'cb-query', method: 'POST', path: `/webhooks/workflow-callbacks/${token}?from=test`, body: Buffer.from('{}'), status: 409 },
      { id: 'cb-trailing', method: 'POST', path: `/webhooks/workflow-callbacks/${token}/`, body: Buffer.from('{}'), status: 409 },
      { id: 'cb-upper', method: 'POST', path: `/WEBHOOKS/Workflow-Callbacks/${token}`, body: Buffer.from('{}'), status: 404 },
      { id: 'cb-double-slash', method: 'POST', path: `//webhooks/workflow-callbacks/${token}`, body: Buffer.from('{}'), status: 404 },
      { id: 'cb-too-large', method: 'POST', path: `/%77ebhooks/workflow-callbacks/${token}`, body: Buffer.alloc(1024 * 1024 + 10, 'a'), status: 413 },
      { id: 'cb-bad-encoding', method: 'POST', path: `/%77ebhooks/workflow-callbacks/${token}%ZZ`, body: Buffer.from('{}'), status: 400 },
      { id: 'cb-get', method: 'GET', path: `/%77ebhooks/workflow-callbacks/${token}`, status: 404 },
    ];
    const statuses: Record<string, number> = {};
    for (const r of requests) {
      const res = await fetch(`${server.url}${r.path}`, { method: r.method, headers: { 'x-request-id': r.id, ...(r.body ? { 'content-type': 'application/json' } : {}) }, body: r.body });
      await res.arrayBuffer();
      statuses[r.id] = res.status;
    }
    await waitFor(() => requests.every((r) => logText.includes(`"reqId":"${r.id}"`)), 'every request to be logged');
    // One more request after them: once its line is in, whatever the server wrote about the
    // earlier ones (after their answers too) is in before it.
    await (await fetch(`${server.url}/no-such-route`, { headers: { 'x-request-id': 'after-all' } })).arrayBuffer();
    await waitFor(() => logText.includes('"reqId":"after-all"'), 'the later request to be logged');
    const lines = logText.split('\n').filter(Boolean);
    const leaking = lines.filter((line) => [token, token.slice(-32), encodedFirst].some((secret) => line.includes(secret)));
    expect(leaking).toEqual([]);
    expect(statuses).toEqual(Object.fromEntries(requests.map((r) => [r.id, r.status])));
    for (const r of requests) {
      const incoming = lines.map((l) => JSON.parse(l) as { reqId?: string; msg: string; req?: { url: string } }).find((l) => l.reqId === r.id && l.msg === 'incoming request');
      expect(incoming?.req?.url, r.id).toMatch(/\[redacted\]$/);
    }
  });

  it('nor in messages and errors that quote a URL', () => {
    const token = `${randomBytes(16).toString('base64url')}.3.${randomBytes(24).toString('base64url')}`;
    const out = new PassThrough();
    let text = '';
    out.on('data', (c: Buffer) => (text += c.toString()));
    const log = createLogger(loadConfig({ NODE_ENV: 'test', LOG_LEVEL: 'info', LOG_FORMAT: 'json' }), { destination: out });
    log.info(`Route POST:/%77ebhooks/workflow-callbacks/${token} not found`);
    log.warn(`Reply was already sent, did you forget to "return reply" in the "/webhooks/Workflow-Callbacks/%${token.charCodeAt(0).toString(16)}${token.slice(1)}" (POST) route?`);
    log.error({ err: new Error(`'/x/../webhooks/workflow-callbacks/${token}%ZZ' is not a valid url component`) }, 'request errored');
    log.info({ note: 'a token-shaped value in a message' }, 'callback %s received', token);
    const lines = text.split('\n').filter(Boolean);
    expect(lines).toHaveLength(4);
    expect(text).not.toContain(token.slice(-32));
    expect(text).toContain('/webhooks/workflow-callbacks/[redacted]');
  });
});
