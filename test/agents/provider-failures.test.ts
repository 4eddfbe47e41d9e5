// Agent runs when the model provider breaks an answer off: a stream cut after its first token, and
// a non-streamed body that stops half-way. Either is a provider failure like any other: the run ends
// `failed` with the agent's fallback, the provider's error code is recorded, and the model step that
// failed is stored and counted once.
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { bearer } from '../support/client.js';
import { refuseWrites } from '../support/db-faults.js';
import { startFakeLlm, type FakeLlm } from '../support/fake-llm.js';
import { signupTenant, type SignedUpTenant } from '../support/fixtures.js';
import { startTestServer, type TestServer } from '../support/server.js';

let t: TestServer;
let fake: FakeLlm;
let a: SignedUpTenant;

const FALLBACK = 'We are busy right now, please try again shortly.';
const key = () => ({ headers: bearer(a.apiKey) });

interface SseEvent {
  event: string;
  data: any;
}

/** Reads a whole event stream, as a client does, until the server ends it. */
async function stream(agentKey: string, body: unknown): Promise<{ status: number; events: SseEvent[] }> {
  const res = await fetch(`${t.url}/v1/agents/${agentKey}/run/stream`, {
    method: 'POST',
    headers: { ...bearer(a.apiKey), 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
  const events: SseEvent[] = [];
  for (const block of (await res.text()).split('\n\n')) {
    const lines = block.split('\n').filter((l) => !l.startsWith(':'));
    const event = lines.find((l) => l.startsWith('event: '))?.slice(7);
    if (!event) continue;
    events.push({ event, data: JSON.parse(lines.filter((l) => l.startsWith('data: ')).map((l) => l.slice(6)).join('\n')) });
  }
  return { status: res.status, events };
}

const detail = async (agentKey: string, runId: string) => {
  const res = await t.api.get(`/v1/agents/${agentKey}/runs/${runId}`, key());
  expect(res.status, res.text).toBe(200);
  return res.body.data.run;
};

beforeAll(async () => {
  fake = await startFakeLlm();
  t = await startTestServer({
    OPENAI_BASE_URL: fake.url, OPENAI_API_KEY: 'sk-test', DEFAULT_MODEL: 'gpt-4o-mini', LLM_MAX_RETRIES: '2',
    // Every call of this file goes to one target; its breaker must not open between the cases.
    LLM_BREAKER_MIN_CALLS: '20',
  });
  a = await signupTenant(t.api, { companyName: 'Cut Answers' });
  const created = await t.api.post('/v1/agents', { agent_key: 'cutter', name: 'Cutter', goal: 'Answer questions', behavior_config: { fallback: FALLBACK } }, key());
  expect(created.status, created.text).toBe(201);
  const deployed = await t.api.post('/v1/agents/cutter/deploy', undefined, key());
  expect(deployed.status, deployed.text).toBe(200);
});
afterAll(async () => {
  await t?.close();
  await fake?.close();
});
afterEach(() => fake.reset());

describe('agent runs when the provider cuts an answer', () => {
  it('a stream cut after the first token: run.failed with the provider error, the run failed with the fallback, one step everywhere', async () => {
    fake.script([{ content: 'a long answer that the provider never finishes sending to us', cut_after: 8 }]);
    const res = await stream('cutter', { input: { message: 'Tell me everything' } });
    expect(res.status).toBe(200);
    expect(res.events[0].event).toBe('run.started');
    const last = res.events.at(-1)!;
    expect(last.event).toBe('run.failed');
    const runId = res.events[0].data.run_id;
    expect(last.data).toMatchObject({
      run_id: runId, session_id: res.events[0].data.session_id, status: 'failed', output: FALLBACK, steps: 1,
      error: { code: 'LLM_PROVIDER_ERROR', reason: 'stream_cut' },
    });
    // Part of the answer was handed on: the call is never made again.
    expect(fake.chatRequests()).toHaveLength(1);

    const run = await detail('cutter', runId);
    expect(run).toMatchObject({ status: 'failed', output: FALLBACK, steps: 1, error: { code: 'LLM_PROVIDER_ERROR', reason: 'stream_cut' } });
    expect(run.completed_at).not.toBeNull();
    // The cut model call is stored once, as a failed llm step; the counts agree.
    expect(run.trace).toHaveLength(1);
    expect(run.trace[0]).toMatchObject({ index: 0, type: 'llm', error: expect.any(String) });
    expect(run.trace.filter((s: { type: string }) => s.type === 'llm')).toHaveLength(last.data.steps);
    expect(run.steps).toBe(last.data.steps);
    const stored = await t.sql<{ n: string }>(`select count(*) as n from run_steps where run_kind = 'agent' and run_id = $1`, [runId]);
    expect(Number(stored[0].n)).toBe(1);
    // The conversation records the fallback as the agent's turn.
    const transcript = await t.api.get(`/v1/agents/cutter/sessions/${run.session_id}/transcript`, key());
    expect(transcript.body.data.turns.at(-1)).toMatchObject({ role: 'assistant', content: FALLBACK, run_id: runId });
  });

  it('a body truncated on every attempt: the run fails as a provider failure with the fallback (never a 500)', async () => {
    fake.fail(3, 'truncate');
    const res = await t.api.post('/v1/agents/cutter/run', { input: { message: 'hello' } }, key());
    expect(res.status, res.text).toBe(200);
    expect(res.body.data).toMatchObject({ status: 'failed', output: FALLBACK, steps: 1 });
    // The first attempt and LLM_MAX_RETRIES (2) more.
    expect(fake.chatRequests()).toHaveLength(3);
    const run = await detail('cutter', res.body.data.run_id);
    expect(run).toMatchObject({ status: 'failed', output: FALLBACK, steps: 1, error: { code: 'LLM_PROVIDER_ERROR', reason: 'truncated' } });
    expect(run.trace).toHaveLength(1);
    expect(run.trace[0]).toMatchObject({ type: 'llm', error: expect.any(String) });
  });

  it('a run that throws (our fault, not the provider\'s) is stored failed with the fallback, and the stream says so with the stored numbers', async () => {
    fake.script(['A whole answer that cannot be stored as completed.']);
    // The database refuses the run's completion, as a full disk would.
    const allow = await refuseWrites((text) => t.sql(text), 'refuse_agent_completion', 'agent_runs', 'update', "new.status = 'completed'");
    let res: Awaited<ReturnType<typeof stream>>;
    try {
      res = await stream('cutter', { input: { message: 'Hi' } });
    } finally {
      await allow();
    }
    const last = res.events.at(-1)!;
    expect(last).toMatchObject({ event: 'run.failed', data: { status: 'failed', output: FALLBACK, steps: 1, error: { code: 'INTERNAL_ERROR' } } });
    const run = await detail('cutter', res.events[0].data.run_id);
    expect(run).toMatchObject({ status: 'failed', output: FALLBACK, steps: 1, error: { code: 'INTERNAL_ERROR' } });
    expect(run.trace).toHaveLength(1);
  });

  it('a body truncated once is retried and the run completes', async () => {
    fake.fail(1, 'truncate');
    fake.script(['Here is the whole answer.']);
    const res = await t.api.post('/v1/agents/cutter/run', { input: { message: 'hello again' } }, key());
    expect(res.status, res.text).toBe(200);
    expect(res.body.data).toMatchObject({ status: 'completed', output: 'Here is the whole answer.', steps: 1 });
    expect(fake.chatRequests()).toHaveLength(2);
    const run = await detail('cutter', res.body.data.run_id);
    expect(run.error).toBeNull();
    expect(run.trace).toHaveLength(1);
    expect(run.trace[0]).toMatchObject({ type: 'llm', error: null });
  });
});
