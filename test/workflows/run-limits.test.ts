// A workflow run is bounded by its tenant's plan while it runs: step executions (loop iterations
// and nested loops counted), the size of each step's output and of everything the run stores, its
// input, and its time. Each abusive run below ends with its documented error and the step that
// stopped, while another client's /health/live probes keep being answered (the run gives the event
// loop back), the process's memory stays small, and another tenant's run completes meanwhile.
// (Trial plan: step_output_bytes 1 MiB, run_state_bytes 8 MiB, run_input_bytes 2 MiB; run_steps is
// raised from 5,000 to 10,000, a loop's max_iterations, for this file, so that a loop stopped by it
// spans many probes on a loaded machine too: 5,000 quick steps can be over before a slow watcher's
// second probe is answered, which says nothing about the event loop.)
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_PLAN_LIMITS } from '../../server/tenants/plan-limits.js';
import { bearer } from '../support/client.js';
import { signupTenant, type SignedUpTenant } from '../support/fixtures.js';
import { answeredDuring, expectAnsweredDuring, rssMiB, watchRss } from '../support/health-watch.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { waitFor } from '../support/wait-for.js';
import { createWorkflow, MANUAL_TRIGGER } from '../support/workflows.js';

const RUN_STEPS = 10_000;
const trial = { ...DEFAULT_PLAN_LIMITS.trial, run_steps: RUN_STEPS };
let t: TestServer;
let a: SignedUpTenant;
let b: SignedUpTenant;
let bWorkflow: string;

const key = (s: SignedUpTenant) => ({ headers: bearer(s.apiKey) });
const run = (s: SignedUpTenant, ref: string, input: Record<string, unknown>) => t.api.post(`/v1/workflows/${ref}/run`, { input }, key(s));

/**
 * Runs `abuse` while another thread probes /health/live and this process's memory is sampled, and
 * tenant B runs its own workflow meanwhile; answers what the abuse answered with the figures.
 */
async function underWatch<T>(label: string, abuse: () => Promise<T>) {
  const rssBefore = rssMiB();
  const rss = watchRss();
  const watched = await answeredDuring(t.url, () => Promise.all([abuse(), run(b, bWorkflow, { n: 1 })]));
  const peak = rss.stop();
  const [result, other] = watched.result;
  // The figures, for the record (docs/operating.md lists them).
  console.log(`[run limits] ${label}: ${watched.answeredDuring} health probes answered during the run, RSS +${peak - rssBefore} MiB`);
  expect(other.status, other.text).toBe(200);
  expect(other.body.data.status).toBe('completed');
  return { result, watched, rssGrowthMiB: peak - rssBefore };
}

beforeAll(async () => {
  t = await startTestServer({ PLAN_LIMITS: JSON.stringify({ trial: { run_steps: RUN_STEPS } }) });
  a = await signupTenant(t.api, { companyName: 'Limits A' });
  b = await signupTenant(t.api, { companyName: 'Limits B' });
  bWorkflow = (await createWorkflow(t.api, b.apiKey, 'Other tenant', [MANUAL_TRIGGER, { id: 'echo', step_type: 'action', action_id: 'transform', config: { output: { n: '{{trigger.n}}' } } }])).id;
});
afterAll(async () => {
  await t?.close();
});

const loopOver = (items: string, body: unknown, maxIterations = 10_000) => [
  MANUAL_TRIGGER,
  { id: 'each', step_type: 'loop', config: { items, step_ref: 'body', max_iterations: maxIterations }, on_success_ref: 'done' },
  body,
  { id: 'done', step_type: 'end', config: { output: { results: '{{steps.each.output}}' } } },
];

describe('loops', () => {
  it('a loop whose results grow past a step output ends OUTPUT_TOO_LARGE, without holding the process or its memory', async () => {
    const wf = await createWorkflow(t.api, a.apiKey, 'Growing loop', loopOver('trigger.l', { id: 'body', step_type: 'action', action_id: 'transform', config: { output: 'x{{trigger.s}}' } }));
    const input = { l: Array(10_000).fill(1), s: 'y'.repeat(600 * 1024) };
    const watched = await underWatch('growing loop', () => run(a, wf.id, input));
    const res = watched.result;
    expect(res.status, res.text).toBe(200);
    expect(res.body.data.status).toBe('failed');
    const detail = await t.api.get(`/v1/workflows/${wf.id}/runs/${res.body.data.run_id}`, key(a));
    expect(detail.body.data.run.error).toMatchObject({ code: 'OUTPUT_TOO_LARGE', limit: 'step_output_bytes', max: trial.step_output_bytes, step_id: 'each' });
    expectAnsweredDuring(watched.watched);
    expect(watched.rssGrowthMiB).toBeLessThan(200);
  });

  it('a long loop of quick steps yields to other requests and stops at the plan\'s step executions', async () => {
    const wf = await createWorkflow(t.api, a.apiKey, 'Long loop', loopOver('trigger.l', { id: 'body', step_type: 'action', action_id: 'transform', config: { output: '{{loop.index}}' } }));
    const watched = await underWatch('long loop', () => run(a, wf.id, { l: Array(RUN_STEPS).fill(1) }));
    const res = watched.result;
    expect(res.body.data.status).toBe('failed');
    const [row] = await t.sql<{ error: Record<string, unknown>; executions: number }>('select error, executions from workflow_runs where id = $1', [res.body.data.run_id]);
    expect(row.error).toMatchObject({ code: 'STEP_LIMIT_EXCEEDED', limit: 'run_steps', max: trial.run_steps, step_id: 'each' });
    expect(row.executions).toBe(trial.run_steps + 1);
    expectAnsweredDuring(watched.watched);
  });

  it('nested loops count every inner iteration: 3,000 x 3,000 ends STEP_LIMIT_EXCEEDED at once', async () => {
    const wf = await createWorkflow(t.api, a.apiKey, 'Nested loops', [
      MANUAL_TRIGGER,
      { id: 'outer', step_type: 'loop', config: { items: 'trigger.l', step_ref: 'inner', max_iterations: 10_000 }, on_success_ref: 'done' },
      { id: 'inner', step_type: 'loop', config: { items: 'trigger.l', step_ref: 'body', max_iterations: 10_000 } },
      { id: 'body', step_type: 'action', action_id: 'transform', config: { output: '{{loop.index}}' } },
      { id: 'done', step_type: 'end', config: { output: {} } },
    ]);
    const watched = await underWatch('nested loops', () => run(a, wf.id, { l: Array(3_000).fill(1) }));
    expect(watched.result.body.data.status).toBe('failed');
    const [row] = await t.sql<{ error: Record<string, unknown>; executions: number }>('select error, executions from workflow_runs where id = $1', [watched.result.body.data.run_id]);
    expect(row.error).toMatchObject({ code: 'STEP_LIMIT_EXCEEDED', limit: 'run_steps', max: trial.run_steps });
    expect(row.executions).toBe(trial.run_steps + 1);
    expectAnsweredDuring(watched.watched);
  });

  it('loops that run each other as bodies are refused when saved', async () => {
    const res = await t.api.post('/v1/workflows', {
      name: 'Loop cycle',
      steps: [
        MANUAL_TRIGGER,
        { id: 'a', step_type: 'loop', config: { items: 'trigger.l', step_ref: 'b' } },
        { id: 'b', step_type: 'loop', config: { items: 'trigger.l', step_ref: 'a' } },
      ],
    }, key(a));
    const deployed = res.status === 201 ? await t.api.post(`/v1/workflows/${res.body.data.workflow.id}/deploy`, undefined, key(a)) : res;
    expect(deployed.status, deployed.text).toBe(400);
    expect(JSON.stringify(deployed.body.error.details.issues)).toContain('loop_body_cycle');
  });
});

describe('sizes', () => {
  it('an input over run_input_bytes is refused with 413 before a run exists, and stored runs stay small to read', async () => {
    const echo = await createWorkflow(t.api, a.apiKey, 'Echo', [MANUAL_TRIGGER, { id: 'out', step_type: 'end', config: { output: '{{trigger}}' } }]);
    const big = await run(a, echo.id, { s: 'z'.repeat(20 * 1024 * 1024) });
    expect(big.status, big.text.slice(0, 300)).toBe(413);
    expect(big.body.error).toMatchObject({ code: 'PAYLOAD_TOO_LARGE', details: { limit: 'run_input_bytes', max: trial.run_input_bytes } });
    const [count] = await t.sql<{ n: number }>('select count(*)::int as n from workflow_runs where workflow_id = $1', [echo.id]);
    expect(count.n).toBe(0);

    // Just under the input limit: the run starts, the echo is larger than a step may output, and
    // reading the run answers the input once (the trigger's row keeps a preview), not more.
    const fits = await run(a, echo.id, { s: 'z'.repeat(trial.run_input_bytes - 100) });
    expect(fits.status).toBe(200);
    expect(fits.body.data.status).toBe('failed');
    const detail = await t.api.get(`/v1/workflows/${echo.id}/runs/${fits.body.data.run_id}`, key(a));
    expect(detail.body.data.run.error).toMatchObject({ code: 'OUTPUT_TOO_LARGE', limit: 'step_output_bytes', step_id: 'out' });
    expect(detail.text.length).toBeLessThan(trial.run_input_bytes + 200 * 1024);
  });

  it('a run continued after a wait reads the trigger\'s whole output, though its row keeps a preview', async () => {
    const wf = await createWorkflow(t.api, a.apiKey, 'Wait then read', [
      MANUAL_TRIGGER,
      { id: 'pause', step_type: 'delay', config: { seconds: 1 } },
      { id: 'done', step_type: 'end', config: { output: { length: '{{steps.start.output.s}}' } } },
    ]);
    const s = 'w'.repeat(200 * 1024);
    const started = await run(a, wf.id, { s });
    expect(started.body.data.status).toBe('waiting');
    const finished = await waitFor(async () => {
      const res = await t.api.get(`/v1/workflows/${wf.id}/runs/${started.body.data.run_id}`, key(a));
      return res.body.data.run.status === 'completed' ? res.body.data.run : null;
    }, 'the run to continue', 15_000);
    expect(finished.output.length).toBe(s);
    expect(finished.trace[0].output).toMatchObject({ truncated: true });
  });

  it('a saved value over a step output is refused before it is saved', async () => {
    const wf = await createWorkflow(t.api, a.apiKey, 'Big state', [
      MANUAL_TRIGGER,
      { id: 'save', step_type: 'action', action_id: 'set_state', config: { key: 'big', value: '{{trigger.s}}' } },
    ]);
    const res = await run(a, wf.id, { s: 'v'.repeat(trial.step_output_bytes + 1024) });
    expect(res.body.data.status).toBe('failed');
    const [row] = await t.sql<{ error: Record<string, unknown> }>('select error from workflow_runs where id = $1', [res.body.data.run_id]);
    expect(row.error).toMatchObject({ code: 'OUTPUT_TOO_LARGE', limit: 'step_output_bytes', step_id: 'save' });
    const state = await t.api.get(`/v1/workflows/${wf.id}/state`, key(a));
    expect(state.body.data.entries).toEqual([]);
  });

  it('a run whose stored step values pass run_state_bytes ends RUN_STATE_TOO_LARGE', async () => {
    const steps: unknown[] = [MANUAL_TRIGGER];
    for (let i = 0; i < 12; i++) steps.push({ id: `copy${i}`, step_type: 'action', action_id: 'transform', config: { output: '{{trigger.s}}' } });
    const wf = await createWorkflow(t.api, a.apiKey, 'Copies', steps);
    const watched = await underWatch('copies', () => run(a, wf.id, { s: 'q'.repeat(900 * 1024) }));
    expect(watched.result.body.data.status).toBe('failed');
    const [row] = await t.sql<{ error: Record<string, unknown>; stored: number }>(
      `select r.error, (select coalesce(sum(octet_length(s.output::text) + octet_length(s.input::text)), 0)::int from run_steps s where s.run_id = r.id) + octet_length(r.input::text) as stored
         from workflow_runs r where r.id = $1`,
      [watched.result.body.data.run_id],
    );
    expect(row.error).toMatchObject({ code: 'RUN_STATE_TOO_LARGE', limit: 'run_state_bytes', max: trial.run_state_bytes });
    expect(row.stored).toBeLessThanOrEqual(trial.run_state_bytes);
    expectAnsweredDuring(watched.watched);
  });
});

describe('time', () => {
  let slow: http.Server;
  let slowUrl: string;
  let fast: TestServer;
  let c: SignedUpTenant;
  const aborted: string[] = [];
  const answered: string[] = [];
  beforeAll(async () => {
    slow = http.createServer((req, res) => {
      const timer = setTimeout(() => {
        answered.push(req.url ?? '');
        res.end('late');
      }, 10_000);
      req.socket.on('close', () => {
        clearTimeout(timer);
        aborted.push(req.url ?? '');
      });
    });
    await new Promise<void>((resolve) => slow.listen(0, '127.0.0.1', resolve));
    slowUrl = `http://127.0.0.1:${(slow.address() as AddressInfo).port}`;
    fast = await startTestServer({ OUTBOUND_ALLOWED_HOSTS: '127.0.0.1', PLAN_LIMITS: JSON.stringify({ trial: { run_wall_seconds: 1 } }) });
    c = await signupTenant(fast.api, { companyName: 'Time C' });
  });
  afterAll(async () => {
    await fast?.close();
    slow?.closeAllConnections();
    await new Promise((resolve) => slow?.close(resolve));
  });

  it('a run that executes past run_wall_seconds ends RUN_TIMEOUT, and the step in flight is stopped', async () => {
    const wf = await createWorkflow(fast.api, c.apiKey, 'Slow call', [
      MANUAL_TRIGGER,
      { id: 'call', step_type: 'action', action_id: 'http_request', config: { method: 'GET', url: `${slowUrl}/wait`, timeout_ms: 60_000 } },
    ]);
    const res = await fast.api.post(`/v1/workflows/${wf.id}/run`, { input: {} }, key(c));
    expect(res.body.data.status).toBe('failed');
    // The run did not wait for the call's answer (10 s away): it hung up first.
    expect(answered).not.toContain('/wait');
    const [row] = await fast.sql<{ error: Record<string, unknown> }>('select error from workflow_runs where id = $1', [res.body.data.run_id]);
    expect(row.error).toMatchObject({ code: 'RUN_TIMEOUT', limit: 'run_wall_seconds', max: 1, step_id: 'call' });
    expect(aborted).toContain('/wait');
  });
});
