import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { bearer } from '../support/client.js';
import { startFakeLlm, type FakeLlm } from '../support/fake-llm.js';
import { signupTenant, type SignedUpTenant } from '../support/fixtures.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { waitFor } from '../support/wait-for.js';

let t: TestServer;
let fake: FakeLlm;
let a: SignedUpTenant;

const key = (s: SignedUpTenant) => ({ headers: bearer(s.apiKey) });

interface SseEvent {
  event: string;
  data: any;
}

/** Reads a whole event stream (or until `stopAfter` returns true, then drops the connection). */
async function stream(agentKey: string, body: unknown, stopAfter?: (e: SseEvent) => boolean): Promise<{ status: number; contentType: string | null; events: SseEvent[]; json?: any }> {
  const controller = new AbortController();
  const res = await fetch(`${t.url}/v1/agents/${agentKey}/run/stream`, {
    method: 'POST',
    headers: { ...bearer(a.apiKey), 'content-type': 'application/json' },
    body: JSON.stringify(body),
    signal: controller.signal,
  });
  const contentType = res.headers.get('content-type');
  if (!contentType?.startsWith('text/event-stream')) return { status: res.status, contentType, events: [], json: await res.json() };
  const events: SseEvent[] = [];
  const reader = res.body!.getReader();
  const decoder = new TextDecoder();
  let buffer = '';
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buffer += decoder.decode(value, { stream: true });
      let cut: number;
      while ((cut = buffer.indexOf('\n\n')) >= 0) {
        const block = buffer.slice(0, cut);
        buffer = buffer.slice(cut + 2);
        const lines = block.split('\n').filter((l) => !l.startsWith(':'));
        const event = lines.find((l) => l.startsWith('event: '))?.slice(7);
        const data = lines.filter((l) => l.startsWith('data: ')).map((l) => l.slice(6)).join('\n');
        if (!event) continue;
        const parsed = { event, data: JSON.parse(data) };
        events.push(parsed);
        if (stopAfter?.(parsed)) {
          controller.abort();
          return { status: res.status, contentType, events };
        }
      }
    }
  } catch (err) {
    if ((err as Error).name !== 'AbortError') throw err;
  }
  return { status: res.status, contentType, events };
}

async function createAgent(body: Record<string, unknown>) {
  const res = await t.api.post('/v1/agents', { name: 'Streamer', goal: 'Answer questions', ...body }, key(a));
  expect(res.status, res.text).toBe(201);
  expect((await t.api.post(`/v1/agents/${body.agent_key}/deploy`, undefined, key(a))).status).toBe(200);
}

beforeAll(async () => {
  fake = await startFakeLlm();
  t = await startTestServer({ OPENAI_BASE_URL: fake.url, OPENAI_API_KEY: 'sk-test', DEFAULT_MODEL: 'gpt-4o-mini', LLM_MAX_RETRIES: '0' });
  a = await signupTenant(t.api, { companyName: 'Streams' });
  await createAgent({ agent_key: 'streamer', tools_config: { enabled_platform_tools: ['current_time'] } });
});
afterAll(async () => {
  await t?.close();
  await fake?.close();
});
afterEach(() => fake.reset());

describe('POST /v1/agents/{agentKey}/run/stream', () => {
  it('streams run.started, text deltas, tool events and run.completed with the run body', async () => {
    const answer = 'The time in Berlin is known now, thank you for asking. '.repeat(5).trim();
    fake.script([{ content: 'Let me check. ', tool_calls: [{ name: 'current_time', arguments: { timezone: 'Europe/Berlin' } }] }, answer]);
    const res = await stream('streamer', { input: { message: 'What time is it in Berlin?' } });
    expect(res.status).toBe(200);
    const names = res.events.map((e) => e.event);
    expect(names[0]).toBe('run.started');
    expect(names.at(-1)).toBe('run.completed');
    expect(names.indexOf('tool.started')).toBeLessThan(names.indexOf('tool.completed'));
    expect(names.filter((n) => n === 'llm.delta').length).toBeGreaterThan(2);
    const started = res.events[0].data;
    const done = res.events.at(-1)!.data;
    expect(done).toEqual({ run_id: started.run_id, session_id: started.session_id, status: 'completed', output: answer, steps: 2, total_cost: expect.any(Number), total_latency_ms: expect.any(Number) });
    // The deltas of the last step join to the answer.
    const lastTool = names.lastIndexOf('tool.completed');
    expect(res.events.slice(lastTool).filter((e) => e.event === 'llm.delta').map((e) => e.data.text).join('')).toBe(answer);
    expect(res.events.find((e) => e.event === 'tool.started')!.data).toEqual({ name: 'current_time', input: { timezone: 'Europe/Berlin' } });
    expect(res.events.find((e) => e.event === 'tool.completed')!.data).toMatchObject({ name: 'current_time', error: null, output: { timezone: 'Europe/Berlin' } });
    // The model was asked to stream, with usage.
    expect(fake.chatRequests()[0].body).toMatchObject({ stream: true, stream_options: { include_usage: true } });
    const run = await t.api.get(`/v1/agents/streamer/runs/${started.run_id}`, key(a));
    expect(run.body.data.run).toMatchObject({ status: 'completed', steps: 2 });
    expect(run.body.data.run.trace).toHaveLength(3);
  });

  it('streamed text has passed the output guardrails: it never shows what the final answer redacts', async () => {
    const answer = `${'Thanks for your question, here are the details you asked for. '.repeat(3)}Reach me at jane.doe@example.com or call +1 415 555 0134 any time this week, and we will talk.`;
    fake.script([answer]);
    const res = await stream('streamer', { input: { message: 'contact?' } });
    const streamed = res.events.filter((e) => e.event === 'llm.delta').map((e) => e.data.text).join('');
    const done = res.events.at(-1)!.data;
    expect(done.output).toContain('[EMAIL]');
    expect(done.output).not.toContain('jane.doe@example.com');
    expect(streamed).toBe(done.output);
    expect(res.events.filter((e) => e.event === 'llm.delta').length).toBeGreaterThan(1);
  });

  it('refusals are JSON envelopes before the stream opens', async () => {
    const missing = await stream('nobody', { input: { message: 'hi' } });
    expect(missing.status).toBe(404);
    expect(missing.json).toMatchObject({ success: false, error: { code: 'NOT_FOUND' } });
    const invalid = await stream('streamer', { input: {} });
    expect(invalid.status).toBe(400);
    expect(invalid.json.error.code).toBe('INVALID_INPUT');
    expect(invalid.json.error.details.issues[0].path).toBe('input.message');
    const noKey = await fetch(`${t.url}/v1/agents/streamer/run/stream`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
    expect(noKey.status).toBe(401);
    await t.api.post('/v1/agents', { agent_key: 'drafty', name: 'D', goal: 'G' }, key(a));
    const draft = await stream('drafty', { input: { message: 'hi' } });
    expect(draft.status).toBe(409);
    expect(draft.json.error.code).toBe('AGENT_NOT_ACTIVE');
  });

  it('a failed run ends with run.failed', async () => {
    fake.fail(1, 500);
    const res = await stream('streamer', { input: { message: 'hello' } });
    expect(res.events.at(-1)).toMatchObject({ event: 'run.failed', data: { status: 'failed' } });
  });

  it('a client that disconnects stops the run at the next step; the run is recorded cancelled', async () => {
    let calls = 0;
    fake.script(() => {
      calls++;
      return { content: `step ${calls} `, tool_calls: [{ name: 'current_time', arguments: {} }] };
    });
    const res = await stream('streamer', { input: { message: 'keep going' } }, (e) => e.event === 'tool.completed');
    const runId = res.events[0].data.run_id;
    const run = await waitFor(async () => {
      const r = await t.api.get(`/v1/agents/streamer/runs/${runId}`, key(a));
      return r.body.data.run.status !== 'running' ? r.body.data.run : null;
    }, 'the run to end');
    expect(run.status).toBe('cancelled');
    // No step after the disconnect: at most the call in flight when the client left.
    expect(run.steps).toBeLessThanOrEqual(2);
    expect(run.steps).toBeLessThan(10);
  });
});
