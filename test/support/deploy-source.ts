// The tenant the deploys-as-code tests export and promote: one resource of every kind, built over
// HTTP as a user would (a custom domain and intent bound to a collection, a prompt with two
// versions, a deployed workflow, an agent with an MCP header secret, a dataset and a suite).
import { expect } from 'vitest';
import { bearer } from './client.js';
import { schemaNameOf, type FakeLlm, type FakeRequest } from './fake-llm.js';
import type { SignedUpTenant } from './fixtures.js';
import type { TestServer } from './server.js';

/** The agent's MCP header value; it must never reach a plan, a deployment or the disk. */
export const MCP_SECRET = 'Bearer mcp-secret-value-4711';
/** The environment variable an export names for it. */
export const MCP_SECRET_ENV = 'AGENT_SUPPORT_BOT_MCP_CRM_AUTHORIZATION';
export const GATE_SUITE = 'Triage quality';

export async function must(res: Promise<{ status: number; text: string; body: any }>, status: number) {
  const r = await res;
  expect(r.status, r.text).toBe(status);
  return r.body.data;
}

export async function buildDeploySource(t: TestServer, a: SignedUpTenant): Promise<void> {
  const key = { headers: bearer(a.apiKey) };
  const dash = { headers: bearer(a.token) };
  await must(t.api.post('/dashboard/custom-domains', { domain_key: 'support', display_name: 'Support' }, dash), 201);
  await must(t.api.post('/dashboard/prompts', { prompt_key: 'triage-prompt', name: 'Triage', template: 'Triage this: {{message}}' }, dash), 201);
  await must(t.api.post('/dashboard/prompts/triage-prompt/versions', { template: 'Triage v2:\n{{message}}\n', note: 'two lines' }, dash), 201);
  const collection = await must(t.api.post('/v1/collections', { slug: 'handbook', label: 'Handbook', domain_keys: ['support', 'hiring'] }, key), 201);
  await must(
    t.api.post(
      '/dashboard/custom-domains/support/intents',
      {
        intent_key: 'triage', display_name: 'Triage', prompt_template: 'Classify: {{message}}',
        output_schema: { type: 'object', properties: { label: { type: 'string' } }, required: ['label'] },
        retrieval_config: { enabled: true, collection_ids: [collection.collection.id], top_k: 3 },
      },
      dash,
    ),
    201,
  );
  await must(
    t.api.post('/v1/workflows', {
      name: 'Echo flow',
      steps: [
        { id: 'start', step_type: 'trigger' },
        { id: 'shape', step_type: 'action', action_id: 'transform', config: { output: { said: '{{trigger.text}}' } } },
        { id: 'done', step_type: 'end', config: { output: '{{steps.shape.output}}' } },
      ],
    }, key),
    201,
  );
  await must(t.api.post('/v1/workflows/echo-flow/deploy', {}, key), 200);
  const intentId = (await must(t.api.get('/dashboard/custom-domains/support/intents/triage', dash), 200)).intent.id;
  const workflowId = (await must(t.api.get('/v1/workflows/echo-flow', key), 200)).workflow.id;
  await must(
    t.api.post('/v1/agents', {
      agent_key: 'support-bot', name: 'Support bot', goal: 'Help customers',
      intent_ids: [intentId, 'hiring/resume-analysis'], workflow_ids: [workflowId],
      tools_config: { mcp_servers: [{ name: 'crm', url: 'https://mcp.example.com/mcp', headers: { Authorization: MCP_SECRET } }] },
    }, key),
    201,
  );
  await must(t.api.post('/v1/agents/support-bot/deploy', {}, key), 200);
  const dataset = await must(
    t.api.post('/v1/evals/datasets', { name: 'Triage cases', cases: [{ input: { message: 'my card was charged twice' } }, { input: { message: 'reset my password' }, notes: 'a note' }] }, key),
    201,
  );
  await must(t.api.post('/v1/evals/suites', { name: GATE_SUITE, domain_key: 'support', intent_key: 'triage', dataset_id: dataset.dataset.id, pass_threshold: 4 }, key), 201);
}

/** The fake provider's judge gives every case `score()` (the gate passes at 4 and above). */
export function scriptJudge(fake: FakeLlm, score: () => number): void {
  const isJudge = (req: FakeRequest) => schemaNameOf(req) === 'eval_judge';
  fake.script((req) =>
    isJudge(req) ? { content: { score: score(), dimension_scores: { correctness: score(), completeness: score(), relevance: 5, safety: 5 }, reasoning: 'ok' } } : undefined,
  );
}
