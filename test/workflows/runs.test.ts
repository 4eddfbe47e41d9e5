// Workflow runs over HTTP: the step engine, templates and expressions, saved state, AI steps,
// pausing for input, test runs, streams and attachments.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { bearer } from '../support/client.js';
import { startFakeLlm, type FakeLlm } from '../support/fake-llm.js';
import { signupTenant, type SignedUpTenant } from '../support/fixtures.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { waitFor } from '../support/wait-for.js';
import { createWorkflow, MANUAL_TRIGGER } from '../support/workflows.js';

let t: TestServer;
let fake: FakeLlm;
let web: http.Server;
let webUrl: string;
let a: SignedUpTenant;

const key = (s: SignedUpTenant) => ({ headers: bearer(s.apiKey) });
const trigger = MANUAL_TRIGGER;
const deployed = (name: string, steps: unknown[]) => createWorkflow(t.api, a.apiKey, name, steps);
const run = (ref: string, body: Record<string, unknown>) => t.api.post(`/v1/workflows/${ref}/run`, body, key(a));

beforeAll(async () => {
  fake = await startFakeLlm();
  web = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      if (req.url === '/slow') {
        setTimeout(() => {
          res.writeHead(200, { 'content-type': 'application/json' });
          res.end('{"slow":true}');
        }, 400);
        return;
      }
      if (req.url === '/fail') {
        res.writeHead(500, { 'content-type': 'text/plain' });
        return res.end('boom');
      }
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ method: req.method, path: req.url, received: body ? JSON.parse(body) : null }));
    });
  });
  await new Promise<void>((resolve) => web.listen(0, '127.0.0.1', resolve));
  webUrl = `http://127.0.0.1:${(web.address() as AddressInfo).port}`;
  t = await startTestServer({ OPENAI_BASE_URL: fake.url, OPENAI_API_KEY: 'sk-test', DEFAULT_MODEL: 'gpt-4o-mini', LLM_MAX_RETRIES: '0', OUTBOUND_ALLOWED_HOSTS: '127.0.0.1' });
  a = await signupTenant(t.api, { companyName: 'Runs A' });
});
afterAll(async () => {
  await t?.close();
  await fake?.close();
  await new Promise((resolve) => web?.close(resolve));
});
afterEach(() => fake.reset());

describe('the step engine', () => {
  it('branches on a condition, fills templates, and records every step', async () => {
    const wf = await deployed('Branching', [
      trigger,
      { id: 'check', step_type: 'condition', config: { expression: 'trigger.amount > 100 && trigger.country in ["DE", "FR"]' }, on_success_ref: 'big', on_failure_ref: 'small' },
      { id: 'big', step_type: 'end', config: { output: { size: 'big', amount: '{{trigger.amount}}', note: 'amount {{trigger.amount}} in {{trigger.country}}' } } },
      { id: 'small', step_type: 'end', config: { output: { size: 'small', check: '{{steps.check.output}}' } } },
    ]);
    const big = await run(wf.workflow_key, { input: { amount: 150, country: 'DE' } });
    expect(big.status, big.text).toBe(200);
    expect(big.body.data).toMatchObject({ status: 'completed', output: { size: 'big', amount: 150, note: 'amount 150 in DE' } });
    expect(big.body.data.trace.map((s: any) => [s.step_id, s.status])).toEqual([['start', 'completed'], ['check', 'completed'], ['big', 'completed']]);
    const small = await run(wf.id, { input: { amount: 150, country: 'US' } });
    expect(small.body.data.output).toEqual({ size: 'small', check: { result: false } });

    const detail = await t.api.get(`/v1/workflows/${wf.workflow_key}/runs/${big.body.data.run_id}`, key(a));
    expect(detail.body.data.run).toMatchObject({ status: 'completed', version: 1, scope: 'live', steps: 3, can_retry: false, can_cancel: false, input: { amount: 150, country: 'DE' } });
    expect(detail.body.data.run.trace).toHaveLength(3);
    const list = await t.api.get(`/v1/workflows/${wf.workflow_key}/runs?status=completed`, key(a));
    expect(list.body.data.pagination.total).toBe(2);
  });

  it('a failing expression fails the step and the run; on_failure is followed when set', async () => {
    const wf = await deployed('Failing', [
      trigger,
      { id: 'boom', step_type: 'condition', config: { expression: 'trigger.missing.deeper > 1' }, on_success_ref: 'ok', on_failure_ref: 'rescue' },
      { id: 'ok', step_type: 'end', config: { output: 'ok' } },
      { id: 'rescue', step_type: 'end', config: { output: 'rescued' } },
    ]);
    const res = await run(wf.workflow_key, { input: {} });
    expect(res.body.data).toMatchObject({ status: 'completed', output: 'rescued' });
    expect(res.body.data.trace[1]).toMatchObject({ step_id: 'boom', status: 'failed', error: expect.any(String) });

    const hard = await deployed('Failing hard', [trigger, { id: 'boom', step_type: 'condition', config: { expression: 'trigger.missing.deeper > 1' } }, { id: 'done', step_type: 'end', config: { output: 1 } }]);
    const failed = await run(hard.workflow_key, { input: {} });
    expect(failed.body.data.status).toBe('failed');
    const detail = await t.api.get(`/v1/workflows/${hard.workflow_key}/runs/${failed.body.data.run_id}`, key(a));
    expect(detail.body.data.run).toMatchObject({ status: 'failed', can_retry: true, error: { code: 'STEP_FAILED', step_id: 'boom' } });
  });

  it('switch picks a case, loop maps a list, transform shapes output', async () => {
    const wf = await deployed('Switch and loop', [
      trigger,
      { id: 'route', step_type: 'switch', config: { expression: 'trigger.kind', cases: [{ value: 'list', next_ref: 'each' }], default_ref: 'other' } },
      { id: 'each', step_type: 'loop', config: { items: 'trigger.items', step_ref: 'double' }, on_success_ref: 'done' },
      { id: 'double', step_type: 'action', action_id: 'transform', config: { output: { item: '{{loop.item}}', index: '{{loop.index}}' } }, on_success_ref: 'done' },
      { id: 'done', step_type: 'end', config: { output: '{{steps.each.output}}' } },
      { id: 'other', step_type: 'end', config: { output: 'not a list' } },
    ]);
    const res = await run(wf.workflow_key, { input: { kind: 'list', items: ['a', 'b'] } });
    expect(res.status, res.text).toBe(200);
    expect(res.body.data).toMatchObject({ status: 'completed', output: [{ item: 'a', index: 0 }, { item: 'b', index: 1 }] });
    const other = await run(wf.workflow_key, { input: { kind: 'x' } });
    expect(other.body.data.output).toBe('not a list');
  });

  it('saves state between runs, with scopes, TTLs, listing and deletion', async () => {
    const wf = await deployed('Counter', [
      trigger,
      { id: 'read', step_type: 'action', action_id: 'get_state', config: { key: 'last' } },
      { id: 'write', step_type: 'action', action_id: 'set_state', config: { key: 'last', value: '{{trigger.value}}' } },
      { id: 'temp', step_type: 'action', action_id: 'set_state', config: { key: 'short', value: 1, ttl_seconds: 3600 } },
      { id: 'done', step_type: 'end', config: { output: { before: '{{steps.read.output.value}}', now: '{{state.last}}' } } },
    ]);
    const one = await run(wf.workflow_key, { input: { value: 'first' } });
    expect(one.body.data.output).toEqual({ before: null, now: 'first' });
    const two = await run(wf.workflow_key, { input: { value: 'second' } });
    expect(two.body.data.output).toEqual({ before: 'first', now: 'second' });
    const state = await t.api.get(`/v1/workflows/${wf.workflow_key}/state`, key(a));
    expect(state.body.data.scope).toBe('live');
    expect(state.body.data.entries.map((e: any) => [e.key, e.value, e.expires_at === null])).toEqual([['last', 'second', true], ['short', 1, false]]);
    // The builder's test runs use their own scope.
    const test = await t.api.post(`/v1/workflows/${wf.workflow_key}/test-run`, { input: { value: 'test' } }, key(a));
    expect(test.body.data.output).toEqual({ before: null, now: 'test' });
    expect((await t.api.get(`/v1/workflows/${wf.workflow_key}/state?scope=test`, key(a))).body.data.entries.find((e: any) => e.key === 'last').value).toBe('test');
    // Expired values are hidden.
    await t.sql(`update workflow_state set expires_at = now() - interval '1 second' where key = 'short'`);
    expect((await t.api.get(`/v1/workflows/${wf.workflow_key}/state`, key(a))).body.data.entries.map((e: any) => e.key)).toEqual(['last']);
    const del = await t.api.delete(`/v1/workflows/${wf.workflow_key}/state/last`, key(a));
    expect(del.status).toBe(200);
    const again = await t.api.delete(`/v1/workflows/${wf.workflow_key}/state/last`, key(a));
    expect(again.status).toBe(404);
    expect(again.body.error.code).toBe('STATE_NOT_FOUND');
    const audit = await t.api.get('/dashboard/audit-log', { headers: bearer(a.token) });
    expect(audit.body.data.entries.some((e: any) => e.action === 'workflow.state.delete')).toBe(true);
  });

  it('http_request goes through the SSRF-safe client', async () => {
    const wf = await deployed('Caller', [
      trigger,
      { id: 'call', step_type: 'action', action_id: 'http_request', config: { method: 'POST', url: `${webUrl}/hook`, body: { id: '{{trigger.id}}' } } },
      { id: 'done', step_type: 'end', config: { output: '{{steps.call.output.body}}' } },
    ]);
    const res = await run(wf.workflow_key, { input: { id: 7 } });
    expect(res.body.data.output).toEqual({ method: 'POST', path: '/hook', received: { id: 7 } });

    const blocked = await deployed('Metadata', [trigger, { id: 'call', step_type: 'action', action_id: 'http_request', config: { method: 'GET', url: 'http://169.254.169.254/latest/meta-data' } }]);
    const refused = await run(blocked.workflow_key, { input: {} });
    expect(refused.body.data.status).toBe('failed');
    expect(refused.body.data.trace[1].error).toMatch(/refused|blocked|not allowed|private/i);

    const failing = await deployed('Server error', [trigger, { id: 'call', step_type: 'action', action_id: 'http_request', config: { method: 'GET', url: `${webUrl}/fail` } }]);
    const five = await run(failing.workflow_key, { input: {} });
    expect(five.body.data.status).toBe('failed');
    expect(five.body.data.trace[1]).toMatchObject({ error: 'the server answered HTTP 500', output: { status: 500 } });
  });

  it('runs an intent step through the intent runtime', async () => {
    const wf = await deployed('Screening', [
      trigger,
      { id: 'assess', step_type: 'ai_intent', config: { intent_id: 'hiring/resume-analysis', input: { resume_text: '{{trigger.resume}}' } } },
      { id: 'done', step_type: 'end', config: { output: '{{steps.assess.output}}' } },
    ]);
    const res = await run(wf.workflow_key, { input: { resume: 'Senior engineer, 8 years of TypeScript' } });
    expect(res.body.data.status, JSON.stringify(res.body.data.trace)).toBe('completed');
    expect(res.body.data.output).toEqual(expect.any(Object));
    expect(fake.chatRequests()[0].body.messages.at(-1).content).toContain('Senior engineer, 8 years of TypeScript');
  });

  it('an agent step that asks the user pauses the run (needs_input); the answer resumes it', async () => {
    await t.api.post('/v1/agents', { agent_key: 'intake', name: 'Intake', goal: 'Collect details', tools_config: { enabled_platform_tools: ['ask_user'] } }, key(a));
    await t.api.post('/v1/agents/intake/deploy', undefined, key(a));
    const wf = await deployed('Intake flow', [
      trigger,
      { id: 'ask', step_type: 'ai_agent', config: { agent_key: 'intake', message: 'Help {{trigger.name}}' } },
      { id: 'done', step_type: 'end', config: { output: { answer: '{{steps.ask.output.output}}' } } },
    ]);
    fake.script([{ tool_calls: [{ name: 'ask_user', arguments: { question: 'Which city?' } }] }, 'You chose Porto.']);
    const first = await run(wf.workflow_key, { input: { name: 'Ana' } });
    expect(first.body.data.status).toBe('needs_input');
    expect(first.body.data.trace.at(-1)).toMatchObject({ step_id: 'ask', status: 'needs_input', output: { question: 'Which city?' } });
    const missing = await run(wf.workflow_key, { input: {}, conversation_id: first.body.data.conversation_id });
    expect(missing.status).toBe(400);
    // The answer sent with an Idempotency-Key: a repeat replays the continued run, it does not answer twice.
    const answer = { input: { message: 'Porto' }, conversation_id: first.body.data.conversation_id };
    const headers = { ...bearer(a.apiKey), 'idempotency-key': 'answer-porto' };
    const resumed = await t.api.post(`/v1/workflows/${wf.workflow_key}/run`, answer, { headers });
    expect(resumed.status, resumed.text).toBe(200);
    expect(resumed.body.data).toMatchObject({ run_id: first.body.data.run_id, status: 'completed', output: { answer: 'You chose Porto.' } });
    const calls = fake.chatRequests().length;
    const repeat = await t.api.post(`/v1/workflows/${wf.workflow_key}/run`, answer, { headers });
    expect(repeat.status, repeat.text).toBe(200);
    expect(repeat.body.data).toMatchObject({ run_id: first.body.data.run_id, status: 'completed', idempotent_replay: true, output: { answer: 'You chose Porto.' } });
    expect(fake.chatRequests()).toHaveLength(calls);
    // The agent continued in the same session: its second call saw the question and the answer.
    const sent = fake.chatRequests().at(-1)!.body.messages.map((m: any) => m.content);
    expect(sent).toContain('Porto');
  });

  it('only an active, deployed workflow runs; a test run works on a draft', async () => {
    const res = await t.api.post('/v1/workflows', { name: 'Never deployed', steps: [trigger, { id: 'done', step_type: 'end', config: { output: 'draft ran' } }] }, key(a));
    const wf = res.body.data.workflow;
    expect((await run(wf.id, { input: {} })).status).toBe(404);
    const test = await t.api.post(`/v1/workflows/${wf.id}/test-run`, { input: {} }, key(a));
    expect(test.body.data).toMatchObject({ status: 'completed', output: 'draft ran' });
    await t.api.post(`/v1/workflows/${wf.id}/deploy`, undefined, key(a));
    await t.api.patch(`/v1/workflows/${wf.id}/toggle`, undefined, key(a));
    expect((await run(wf.id, { input: {} })).status).toBe(404);
  });

  it('reads attachments into text before the run', async () => {
    const wf = await deployed('Attachments', [trigger, { id: 'done', step_type: 'end', config: { output: { text: '{{trigger.attachments_text}}', first: '{{trigger.attachments[0]}}' } } }]);
    const res = await run(wf.workflow_key, { input: { attachments: [{ file_name: 'note.txt', file_base64: Buffer.from('Hello attachment').toString('base64') }] } });
    expect(res.status, res.text).toBe(200);
    expect(res.body.data.output.text).toContain('## File: note.txt');
    expect(res.body.data.output.text).toContain('Hello attachment');
    expect(res.body.data.output.first).toMatchObject({ file_name: 'note.txt', format: 'text', text: 'Hello attachment' });
    const bad = await run(wf.workflow_key, { input: { attachments: [{ file_name: 'x.exe', file_base64: Buffer.from('MZ\x90\x00').toString('base64') }] } });
    expect(bad.status).toBe(400);
    expect(bad.body.error.code).toBe('UNSUPPORTED_ATTACHMENT');
  });

  it('streams step events and a final run event; refusals are JSON', async () => {
    const wf = await deployed('Streamed', [trigger, { id: 'done', step_type: 'end', config: { output: 'streamed' } }]);
    // Through the tests' client: each event is checked against the stream's event schema in the OpenAPI document.
    const res = await t.api.post(`/v1/workflows/${wf.workflow_key}/run/stream`, { input: {} }, { headers: bearer(a.apiKey) });
    expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const text = res.text;
    const events = [...text.matchAll(/event: (\S+)\ndata: (.*)\n/g)].map((m) => [m[1], JSON.parse(m[2]) as any] as const);
    expect(events.map((e) => e[0])).toEqual(['run.started', 'step.started', 'step.completed', 'step.started', 'step.completed', 'run.completed']);
    expect(events.at(-1)![1]).toMatchObject({ status: 'completed', output: 'streamed' });
    // A client that leaves does not stop the run.
    const slow = await deployed('Slow stream', [trigger, { id: 'wait', step_type: 'action', action_id: 'http_request', config: { method: 'GET', url: `${webUrl}/slow` } }, { id: 'done', step_type: 'end', config: { output: 'finished' } }]);
    const controller = new AbortController();
    const left = await fetch(`${t.url}/v1/workflows/${slow.workflow_key}/run/stream`, { method: 'POST', headers: { ...bearer(a.apiKey), 'content-type': 'application/json' }, body: JSON.stringify({ input: {} }), signal: controller.signal });
    const reader = left.body!.getReader();
    const first = new TextDecoder().decode((await reader.read()).value);
    const runId = /"run_id":"([^"]+)"/.exec(first)![1];
    controller.abort();
    const finished = await waitFor(async () => {
      const r = await t.api.get(`/v1/workflows/${slow.workflow_key}/runs/${runId}`, key(a));
      return r.body.data.run.status === 'completed' ? r.body.data.run : null;
    }, 'the abandoned run to finish');
    expect(finished.output).toBe('finished');
    const missing = await fetch(`${t.url}/v1/workflows/nope/run/stream`, { method: 'POST', headers: { ...bearer(a.apiKey), 'content-type': 'application/json' }, body: '{}' });
    expect(missing.status).toBe(404);
    expect(((await missing.json()) as any).error.code).toBe('NOT_FOUND');
  });
});
