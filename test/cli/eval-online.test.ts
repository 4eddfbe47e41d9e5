// `liya evals online` and `liya evals monitors`: a rule created from the CLI samples real intent runs,
// its live window is listed with its scores, a monitor is created, listed and shown with its
// history, the budget is read and set, and bad flags are refused before any request.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runLiya, type CliRunOptions } from '../support/cli.js';
import { bearer } from '../support/client.js';
import { schemaNameOf, startFakeLlm, type FakeLlm } from '../support/fake-llm.js';
import { signupTenant, type SignedUpTenant } from '../support/fixtures.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { waitFor } from '../support/wait-for.js';

let t: TestServer;
let fake: FakeLlm;
let tenant: SignedUpTenant;

function liya(args: string[], options: CliRunOptions = {}) {
  return runLiya(args, { ...options, env: { LIYA_URL: t.url, LIYA_API_KEY: tenant.apiKey, ...options.env } });
}

beforeAll(async () => {
  fake = await startFakeLlm();
  fake.script((req) => (schemaNameOf(req) === 'eval_judge' ? { content: { score: 4, dimension_scores: { correctness: 4, completeness: 4, relevance: 4, safety: 5 }, reasoning: 'fine' } } : undefined));
  t = await startTestServer({ OPENAI_BASE_URL: fake.url, OPENAI_API_KEY: 'sk-test', DEFAULT_MODEL: 'gpt-4o-mini', LLM_MAX_RETRIES: '0' });
  tenant = await signupTenant(t.api, { companyName: 'Online CLI' });
});
afterAll(async () => {
  await t?.close();
  await fake?.close();
});

describe('liya evals online and monitors', () => {
  it('creates a rule, shows its live window, watches it with a monitor and reads the budget', async () => {
    const headers = { headers: bearer(tenant.apiKey) };
    const ds = await t.api.post('/v1/evals/datasets', { name: 'CLI online', cases: [{ input: { user_id: 'u', resume_text: 'x' } }] }, headers);
    const suite = await t.api.post('/v1/evals/suites', { name: 'CLI online', domain_key: 'hiring', intent_key: 'resume-analysis', dataset_id: ds.body.data.dataset.id }, headers);
    expect(suite.status, suite.text).toBe(201);

    const created = await liya(['evals', 'online', 'create', '--suite', suite.body.data.suite.id, '--rate', '1', '--filter', 'channel=web,mail', '--daily-cap', '50', '--json']);
    expect(created.code, created.stderr).toBe(0);
    const { rule } = JSON.parse(created.stdout);
    expect(rule).toMatchObject({ sample_rate: 1, daily_cap: 50, filter: { channel: ['web', 'mail'] }, target: { kind: 'intent', intent_key: 'resume-analysis' } });

    const list = await liya(['evals', 'online', 'list']);
    expect(list.code, list.stderr).toBe(0);
    expect(list.stdout).toContain(rule.id);
    expect(list.stdout).toContain('intent hiring/resume-analysis');

    for (let i = 0; i < 3; i++) {
      const run = await t.api.post('/v1/hiring/resume-analysis', { input: { user_id: `u${i}`, resume_text: `Resume ${i}` }, metadata: { channel: 'web' } }, headers);
      expect(run.status, run.text).toBe(200);
    }
    await waitFor(async () => {
      const windows = (await t.api.get(`/v1/evals/online/${rule.id}/windows`, headers)).body.data.windows;
      return windows[0]?.status === 'completed' && windows[0].cases_done === 3;
    }, 'the three samples to be scored', 30_000);
    const windows = await liya(['evals', 'online', 'windows', rule.id]);
    expect(windows.code, windows.stderr).toBe(0);
    expect(windows.stdout).toContain(new Date().toISOString().slice(0, 10));
    expect(windows.stdout).toContain('3/3');
    expect(windows.stdout).toContain('4.00');

    const monitor = await liya(['evals', 'monitors', 'create', '--rule', rule.id, '--metric', 'pass_rate', '--threshold', '0.8', '--min-samples', '20', '--json']);
    expect(monitor.code, monitor.stderr).toBe(0);
    const { monitor: m } = JSON.parse(monitor.stdout);
    expect(m).toMatchObject({ metric: 'pass_rate', direction: 'below', threshold: 0.8, min_samples: 20, state: 'ok' });
    const monitors = await liya(['evals', 'monitors', 'list', '--rule', rule.id]);
    expect(monitors.stdout).toContain(m.id);
    expect(monitors.stdout).toContain('pass_rate < 0.8');
    const history = await liya(['evals', 'monitors', 'history', m.id]);
    expect(history.code, history.stderr).toBe(0);
    expect(history.stdout).toContain('No changes yet.');

    const budget = await liya(['evals', 'online', 'budget', '--set', '2.5', '--json']);
    expect(budget.code, budget.stderr).toBe(0);
    expect(JSON.parse(budget.stdout).budget).toMatchObject({ monthly_usd: 2.5, own_monthly_usd: 2.5, plan_default_usd: 1 });

    const paused = await liya(['evals', 'online', 'set', rule.id, '--pause']);
    expect(paused.stdout).toContain('paused');
    expect((await liya(['evals', 'monitors', 'delete', m.id])).code).toBe(0);
    expect((await liya(['evals', 'online', 'delete', rule.id])).code).toBe(0);
  });

  it('refuses bad flags before any request (exit 2)', async () => {
    for (const args of [['evals', 'online', 'create', '--suite', 's', '--rate', '2'], ['evals', 'online', 'create', '--suite', 's', '--target', 'nope'], ['evals', 'monitors', 'create', '--rule', 'r', '--metric', 'mean_score', '--threshold', 'x']]) {
      const res = await liya(args);
      expect(res.code, `${args.join(' ')}: ${res.stderr}`).toBe(2);
    }
  });
});
