// Another tenant's id answers 404, exactly as a missing id does, on every route that takes an id.
// The walk below reads the served OpenAPI document, so a new `{param}` route fails this file until
// it is added to ROUTES with tenant A's ids (and a valid body where the route needs one).
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, type ApiResponse } from '../support/client.js';
import { startFakeLlm, type FakeLlm } from '../support/fake-llm.js';
import { adminHeaders, signupTenant, uniqueEmail, type SignedUpTenant } from '../support/fixtures.js';
import { startTestServer, type TestServer } from '../support/server.js';

let t: TestServer;
let fake: FakeLlm;
let a: SignedUpTenant;
let b: SignedUpTenant;
let aIds: TenantIds;

/** Resources of tenant A that tenant B will try to reach. */
interface TenantIds {
  ownerId: string;
  developerId: string;
  productionEnvironmentId: string;
  developmentEnvironmentId: string;
  collectionId: string;
  domainKey: string;
  intentKey: string;
  promptKey: string;
  sessionId: string;
  documentId: string;
  ingestionJobId: string;
  agentKey: string;
  agentRunId: string;
  agentSessionId: string;
  /** A deployed workflow of tenant A (tried by id and by key). */
  workflowId: string;
  workflowKey: string;
  workflowRunId: string;
  /** A run of another workflow of tenant A waiting at an approval step. */
  approvalId: string;
  /** An evaluation dataset with one case, and a suite on it. */
  evalDatasetId: string;
  evalCaseId: string;
  evalSuiteId: string;
  /** A run of that suite (its case errors without a model provider; the run still exists). */
  evalRunId: string;
  /** That run's one result. */
  evalResultId: string;
  /** A review of it. */
  evalReviewId: string;
  /** A deployment of tenant A (of an empty project: nothing to change). */
  deploymentId: string;
  /** A named API key of tenant A. */
  namedKeyId: string;
  /** An event subscription of tenant A, and the event.test it was sent. */
  subscriptionId: string;
  eventId: string;
  /** An online evaluation rule of tenant A, and a monitor of it. */
  onlineRuleId: string;
  monitorId: string;
}

/** Tenant B's own agent: A's run and session ids must not be reachable through it either. */
const B_AGENT_KEY = 'b-own-agent';

type Method = 'get' | 'post' | 'patch' | 'put' | 'delete';

interface RouteCase {
  /** Each entry is one set of path parameters to try (tenant A's ids). */
  params: (ids: TenantIds) => Record<string, string>[];
  /** A valid body per method, so the call reaches the lookup instead of failing validation. */
  bodies?: Partial<Record<Method, unknown>>;
}

/** Fills any parameter that has no tenant-A resource yet: an id nobody owns. */
const unknownId = () => randomUUID();

// Every tenant-scoped route with a path parameter. Add new routes here.
const ROUTES: Record<string, RouteCase> = {
  '/dashboard/users/{id}': {
    params: (ids) => [{ id: ids.ownerId }, { id: ids.developerId }],
    bodies: { patch: { role: 'viewer' } },
  },
  '/dashboard/environments/{id}/api-key/rotate': {
    params: (ids) => [{ id: ids.productionEnvironmentId }, { id: ids.developmentEnvironmentId }],
  },
  '/dashboard/environments/{id}/permissions': {
    params: (ids) => [{ id: ids.productionEnvironmentId }, { id: ids.developmentEnvironmentId }],
    bodies: { patch: { preset: 'read-only' } },
  },
  '/dashboard/api-keys/{id}': {
    params: (ids) => [{ id: ids.namedKeyId }],
  },
  '/v1/ingestion-jobs/{id}': {
    params: (ids) => [{ id: ids.ingestionJobId }],
  },
  '/dashboard/custom-domains/{domainKey}': {
    params: (ids) => [{ domainKey: ids.domainKey }],
    bodies: { patch: { display_name: 'Taken over' } },
  },
  '/dashboard/custom-domains/{domainKey}/intents': {
    params: (ids) => [{ domainKey: ids.domainKey }],
    bodies: { post: { intent_key: 'planted', display_name: 'Planted', prompt_template: 'P' } },
  },
  '/dashboard/custom-domains/{domainKey}/intents/{key}': {
    params: (ids) => [{ domainKey: ids.domainKey, key: ids.intentKey }],
    bodies: { patch: { description: 'Taken over' } },
  },
  '/dashboard/custom-domains/{domainKey}/intents/{key}/versions': {
    params: (ids) => [{ domainKey: ids.domainKey, key: ids.intentKey }],
  },
  '/dashboard/custom-domains/{domainKey}/intents/{key}/versions/{versionNumber}': {
    params: (ids) => [{ domainKey: ids.domainKey, key: ids.intentKey, versionNumber: '1' }],
  },
  '/dashboard/custom-domains/{domainKey}/intents/{key}/versions/{a}/diff/{b}': {
    params: (ids) => [{ domainKey: ids.domainKey, key: ids.intentKey, a: '1', b: '1' }],
  },
  '/dashboard/custom-domains/{domainKey}/intents/{key}/versions/{versionNumber}/restore': {
    params: (ids) => [{ domainKey: ids.domainKey, key: ids.intentKey, versionNumber: '1' }],
  },
  '/dashboard/sessions/{sessionId}': {
    params: (ids) => [{ sessionId: ids.sessionId }],
  },
  '/v1/domains/{domainKey}/intents': {
    params: (ids) => [{ domainKey: ids.domainKey }],
  },
  '/v1/domains/{domainKey}/knowledge/query': {
    params: (ids) => [{ domainKey: ids.domainKey }],
    bodies: { post: { query: 'handbook leave policy' } },
  },
  '/v1/domains/{domainKey}/intents/{intentKey}/run': {
    params: (ids) => [{ domainKey: ids.domainKey, intentKey: ids.intentKey }],
    bodies: { post: { input: { user_id: 'intruder' } } },
  },
  '/dashboard/prompts/{promptKey}': {
    params: (ids) => [{ promptKey: ids.promptKey }],
  },
  '/dashboard/prompts/{promptKey}/versions': {
    params: (ids) => [{ promptKey: ids.promptKey }],
    bodies: { post: { template: 'Taken over' } },
  },
  '/v1/collections/{id}': {
    params: (ids) => [{ id: ids.collectionId }],
    bodies: { patch: { label: 'Taken over' } },
  },
  '/dashboard/collections/{id}': {
    params: (ids) => [{ id: ids.collectionId }],
    bodies: { patch: { label: 'Taken over' } },
  },
  '/dashboard/collections/{id}/domains': {
    params: (ids) => [{ id: ids.collectionId }],
    bodies: { post: { domain_key: 'hiring' } },
  },
  '/dashboard/collections/{id}/domains/{domainKey}': {
    params: (ids) => [{ id: ids.collectionId, domainKey: 'hiring' }],
  },
  '/dashboard/collections/{id}/documents': {
    params: (ids) => [{ id: ids.collectionId }],
    bodies: { post: { document_id: randomUUID() } },
  },
  '/dashboard/collections/{id}/documents/{documentId}': {
    params: (ids) => [{ id: ids.collectionId, documentId: ids.documentId }],
  },
  '/v1/documents/{id}': {
    params: (ids) => [{ id: ids.documentId }],
  },
  '/dashboard/ingestion-jobs/{id}': {
    params: (ids) => [{ id: ids.ingestionJobId }],
  },
  '/dashboard/ingestion-jobs/{id}/cancel': {
    params: (ids) => [{ id: ids.ingestionJobId }],
  },
  '/v1/workflows/{workflowIdOrKey}': {
    params: (ids) => [{ workflowIdOrKey: ids.workflowId }, { workflowIdOrKey: ids.workflowKey }],
    bodies: { patch: { name: 'Taken over' } },
  },
  '/v1/workflows/{workflowIdOrKey}/draft': {
    params: (ids) => [{ workflowIdOrKey: ids.workflowId }, { workflowIdOrKey: ids.workflowKey }],
  },
  '/v1/workflows/{workflowIdOrKey}/toggle': {
    params: (ids) => [{ workflowIdOrKey: ids.workflowId }, { workflowIdOrKey: ids.workflowKey }],
  },
  '/v1/workflows/{workflowIdOrKey}/deploy': {
    params: (ids) => [{ workflowIdOrKey: ids.workflowId }, { workflowIdOrKey: ids.workflowKey }],
  },
  '/v1/workflows/{workflowIdOrKey}/versions': {
    params: (ids) => [{ workflowIdOrKey: ids.workflowId }, { workflowIdOrKey: ids.workflowKey }],
  },
  '/v1/workflows/{workflowIdOrKey}/run': {
    params: (ids) => [{ workflowIdOrKey: ids.workflowId }, { workflowIdOrKey: ids.workflowKey }],
    bodies: { post: { input: {} } },
  },
  '/v1/workflows/{workflowIdOrKey}/run/stream': {
    params: (ids) => [{ workflowIdOrKey: ids.workflowId }, { workflowIdOrKey: ids.workflowKey }],
    bodies: { post: { input: {} } },
  },
  '/v1/workflows/{workflowIdOrKey}/test-run': {
    params: (ids) => [{ workflowIdOrKey: ids.workflowId }, { workflowIdOrKey: ids.workflowKey }],
    bodies: { post: { input: {} } },
  },
  '/v1/workflows/{workflowIdOrKey}/runs': {
    params: (ids) => [{ workflowIdOrKey: ids.workflowId }, { workflowIdOrKey: ids.workflowKey }],
  },
  '/v1/workflows/{workflowIdOrKey}/runs/{runId}': {
    params: (ids) => [{ workflowIdOrKey: ids.workflowId, runId: ids.workflowRunId }, { workflowIdOrKey: ids.workflowKey, runId: ids.workflowRunId }],
  },
  '/v1/workflows/runs/{runId}': {
    params: (ids) => [{ runId: ids.workflowRunId }],
  },
  '/v1/workflows/{workflowId}/runs/{runId}/retry': {
    params: (ids) => [{ workflowId: ids.workflowId, runId: ids.workflowRunId }, { workflowId: ids.workflowKey, runId: ids.workflowRunId }],
  },
  '/v1/workflows/{workflowId}/runs/{runId}/cancel': {
    params: (ids) => [{ workflowId: ids.workflowId, runId: ids.workflowRunId }, { workflowId: ids.workflowKey, runId: ids.workflowRunId }],
  },
  '/v1/workflows/approvals/{approvalId}/decision': {
    params: (ids) => [{ approvalId: ids.approvalId }],
    bodies: { post: { decision: 'approve' } },
  },
  '/v1/workflows/{workflowIdOrKey}/webhook-secret/rotate': {
    params: (ids) => [{ workflowIdOrKey: ids.workflowId }, { workflowIdOrKey: ids.workflowKey }],
    bodies: { post: { grace_period_seconds: 0 } },
  },
  '/v1/workflows/{workflowIdOrKey}/state': {
    params: (ids) => [{ workflowIdOrKey: ids.workflowId }, { workflowIdOrKey: ids.workflowKey }],
  },
  '/v1/workflows/{workflowIdOrKey}/state/{key}': {
    params: (ids) => [{ workflowIdOrKey: ids.workflowId, key: 'counter' }, { workflowIdOrKey: ids.workflowKey, key: 'counter' }],
  },
  '/v1/evals/datasets/{id}': {
    params: (ids) => [{ id: ids.evalDatasetId }],
    bodies: { patch: { name: 'Taken over' } },
  },
  '/v1/evals/datasets/{id}/import': {
    params: (ids) => [{ id: ids.evalDatasetId }],
    bodies: { post: { cases: [{ input: { user_id: 'x' } }] } },
  },
  '/v1/evals/datasets/{id}/cases': {
    params: (ids) => [{ id: ids.evalDatasetId }],
    bodies: { post: { input: { user_id: 'x' } } },
  },
  // Templates are shared starter data (every tenant may clone them): a foreign id cannot exist.
  '/v1/evals/datasets/templates/{id}/clone': {
    params: () => [{ id: 'no-such-template' }],
  },
  '/v1/evals/cases/{caseId}': {
    params: (ids) => [{ caseId: ids.evalCaseId }],
    bodies: { patch: { notes: 'taken over' } },
  },
  '/v1/evals/suites/{id}': {
    params: (ids) => [{ id: ids.evalSuiteId }],
    bodies: { patch: { name: 'Taken over' } },
  },
  '/v1/evals/suites/{id}/run': {
    params: (ids) => [{ id: ids.evalSuiteId }],
    bodies: { post: {} },
  },
  '/v1/evals/suites/{id}/runs': {
    params: (ids) => [{ id: ids.evalSuiteId }],
  },
  '/v1/evals/suites/{id}/baseline': {
    params: (ids) => [{ id: ids.evalSuiteId }],
    bodies: { post: { run_id: null } },
  },
  '/v1/evals/runs/{id}': {
    params: (ids) => [{ id: ids.evalRunId }],
  },
  '/v1/deployments/{id}': {
    params: (ids) => [{ id: ids.deploymentId }],
  },
  '/v1/deployments/{id}/publish': {
    params: (ids) => [{ id: ids.deploymentId }],
    bodies: { post: { project: {} } },
  },
  '/v1/evals/runs/{id}/results': {
    params: (ids) => [{ id: ids.evalRunId }],
  },
  '/v1/evals/suites/{id}/compare-models': {
    params: (ids) => [{ id: ids.evalSuiteId }],
    bodies: { post: { model_a: 'm1', model_b: 'm2' } },
  },
  '/v1/evals/runs/{id}/compare': {
    params: (ids) => [{ id: ids.evalRunId }],
  },
  '/v1/evals/runs/{id}/compare-pairwise': {
    params: (ids) => [{ id: ids.evalRunId }],
    bodies: { post: { against: randomUUID() } },
  },
  '/v1/evals/results/{resultId}/reviews': {
    params: (ids) => [{ resultId: ids.evalResultId }],
    bodies: { post: { verdict: 'agree' } },
  },
  '/v1/evals/reviews/{id}': {
    params: (ids) => [{ id: ids.evalReviewId }],
  },
  '/v1/evals/runs/{id}/cancel': {
    params: (ids) => [{ id: ids.evalRunId }],
  },
  '/v1/evals/runs/{id}/resume': {
    params: (ids) => [{ id: ids.evalRunId }],
  },
  '/v1/agents/{agentKey}': {
    params: (ids) => [{ agentKey: ids.agentKey }],
    bodies: { patch: { name: 'Taken over', status: 'inactive' } },
  },
  '/v1/agents/{agentKey}/deploy': {
    params: (ids) => [{ agentKey: ids.agentKey }],
  },
  '/v1/agents/{agentKey}/run': {
    params: (ids) => [{ agentKey: ids.agentKey }],
    bodies: { post: { input: { message: 'hi' } } },
  },
  '/v1/agents/{agentKey}/run/stream': {
    params: (ids) => [{ agentKey: ids.agentKey }],
    bodies: { post: { input: { message: 'hi' } } },
  },
  '/v1/agents/{agentKey}/runs': {
    params: (ids) => [{ agentKey: ids.agentKey }],
  },
  '/v1/agents/{agentKey}/runs/{runId}': {
    params: (ids) => [{ agentKey: ids.agentKey, runId: ids.agentRunId }, { agentKey: B_AGENT_KEY, runId: ids.agentRunId }],
  },
  '/v1/agents/{agentKey}/sessions': {
    params: (ids) => [{ agentKey: ids.agentKey }],
  },
  '/v1/event-subscriptions/{subscriptionId}': {
    params: (ids) => [{ subscriptionId: ids.subscriptionId }],
    bodies: { patch: { enabled: false } },
  },
  '/v1/event-subscriptions/{subscriptionId}/rotate-secret': { params: (ids) => [{ subscriptionId: ids.subscriptionId }], bodies: { post: {} } },
  '/v1/event-subscriptions/{subscriptionId}/resume': { params: (ids) => [{ subscriptionId: ids.subscriptionId }] },
  '/v1/event-subscriptions/{subscriptionId}/test': { params: (ids) => [{ subscriptionId: ids.subscriptionId }] },
  '/v1/event-subscriptions/{subscriptionId}/deliveries': { params: (ids) => [{ subscriptionId: ids.subscriptionId }] },
  '/v1/events/{eventId}': { params: (ids) => [{ eventId: ids.eventId }] },
  '/v1/evals/online/{ruleId}': { params: (ids) => [{ ruleId: ids.onlineRuleId }], bodies: { patch: { enabled: false } } },
  '/v1/evals/online/{ruleId}/windows': { params: (ids) => [{ ruleId: ids.onlineRuleId }] },
  '/v1/evals/monitors/{monitorId}': { params: (ids) => [{ monitorId: ids.monitorId }], bodies: { patch: { enabled: false } } },
  '/v1/evals/monitors/{monitorId}/history': { params: (ids) => [{ monitorId: ids.monitorId }] },
  '/v1/events/{eventId}/replay': { params: (ids) => [{ eventId: ids.eventId }], bodies: { post: {} } },
  '/dashboard/event-subscriptions/{subscriptionId}': {
    params: (ids) => [{ subscriptionId: ids.subscriptionId }],
    bodies: { patch: { enabled: false } },
  },
  '/dashboard/event-subscriptions/{subscriptionId}/rotate-secret': { params: (ids) => [{ subscriptionId: ids.subscriptionId }], bodies: { post: {} } },
  '/v1/agents/{agentKey}/sessions/{sessionId}/transcript': {
    params: (ids) => [{ agentKey: ids.agentKey, sessionId: ids.agentSessionId }, { agentKey: B_AGENT_KEY, sessionId: ids.agentSessionId }],
  },
};

const NUMERIC_PARAMS = new Set(['versionNumber', 'a', 'b']);

// Routes that are platform-wide by design (the admin secret sees every tenant).
// and routes whose parameter names a platform-wide thing rather than a tenant's row: a provider
// name (each tenant has its own key per provider; test/llm/provider-keys.test.ts checks isolation).
// Webhook and callback routes carry no tenant credentials: the slug with its signature, or the
// signed token, is the credential (test/workflows covers forged ones).
const PLATFORM_ROUTES = /^\/admin\/|^\/dashboard\/provider-keys\/\{provider\}$|^\/webhooks\//;

interface OpenApiOperation {
  security?: Record<string, string[]>[];
  requestBody?: unknown;
}

function credentialsFor(operation: OpenApiOperation, tenant: SignedUpTenant): Record<string, string> | null {
  const schemes = (operation.security ?? []).flatMap((s) => Object.keys(s));
  if (schemes.includes('ApiKeyBearer') || schemes.includes('ApiKeyHeader')) return bearer(tenant.apiKey);
  if (schemes.includes('DashboardJwt')) return bearer(tenant.token);
  return null;
}

const fill = (template: string, params: Record<string, string>) =>
  template.replace(/\{(\w+)\}/g, (_, name: string) => {
    if (!(name in params)) throw new Error(`${template}: no value for {${name}}`);
    return encodeURIComponent(params[name]);
  });

/** Every agent run, session and message, of any tenant. */
const agentActivity = async () => ({
  runs: await t.sql('select id, tenant_id, status from agent_runs order by id'),
  sessions: await t.sql('select id, tenant_id, turns, last_activity_at from agent_sessions order by id'),
  messages: await t.sql('select id from agent_messages order by id'),
});

function expectNotFound(res: ApiResponse, label: string) {
  expect(res.status, `${label}: ${res.text}`).toBe(404);
  expect(res.body, label).toEqual({ success: false, error: expect.objectContaining({ code: 'NOT_FOUND', message: expect.any(String) }) });
}

async function paramRoutes() {
  const doc = (await t.api.get('/openapi.json')).body as { paths: Record<string, Record<string, OpenApiOperation>> };
  return Object.entries(doc.paths).filter(([template]) => template.includes('{'));
}

beforeAll(async () => {
  // A fake model provider, so tenant A's agent can really run (a run and a session to reach for).
  fake = await startFakeLlm();
  t = await startTestServer({ OPENAI_BASE_URL: fake.url, OPENAI_API_KEY: 'sk-test', DEFAULT_MODEL: 'gpt-4o-mini', LLM_MAX_RETRIES: '0' });
  a = await signupTenant(t.api, { companyName: 'Tenant A' });
  b = await signupTenant(t.api, { companyName: 'Tenant B' });
  const invited = await t.api.post('/dashboard/users', { email: uniqueEmail('dev'), role: 'developer', password: 'another good password' }, { headers: bearer(a.token) });
  expect(invited.status).toBe(201);
  const envs = await t.api.get('/dashboard/environments', { headers: bearer(a.token) });
  const envId = (name: string) => envs.body.data.environments.find((e: { name: string }) => e.name === name).id as string;
  const collectionId = randomUUID();
  await t.sql(
    `insert into collections (id, tenant_id, slug, label, tags, visibility, created_at, updated_at) values ($1, $2, 'handbook', 'Handbook', '[]', 'workspace', now(), now())`,
    [collectionId, a.tenantId],
  );
  await t.sql(`insert into collection_domains (collection_id, domain_key, tenant_id, created_at) values ($1, 'hiring', $2, now())`, [collectionId, a.tenantId]);
  const owner = { headers: bearer(a.token) };
  expect((await t.api.post('/dashboard/custom-domains', { domain_key: 'tenant-a-domain', display_name: 'A only' }, owner)).status).toBe(201);
  expect((await t.api.post('/dashboard/custom-domains/tenant-a-domain/intents', { intent_key: 'a-intent', display_name: 'A', prompt_template: 'P' }, owner)).status).toBe(201);
  expect((await t.api.post('/dashboard/prompts', { prompt_key: 'a-prompt', name: 'A', template: 'T' }, owner)).status).toBe(201);
  const sessionId = randomUUID();
  await t.sql(`insert into sessions (id, tenant_id, user_id, domain, status, message_count, tokens_used, cost_usd, last_activity_at, created_at) values ($1, $2, 'end-user', 'hiring', 'active', 0, 0, 0, now(), now())`, [sessionId, a.tenantId]);
  // A document of tenant A in its collection, with a pending ingestion job (no job queued: the
  // rows are all the routes read).
  const documentId = randomUUID();
  const ingestionJobId = randomUUID();
  await t.sql(
    `insert into documents (id, tenant_id, name, category, mime_type, size_bytes, content_hash, status, uploaded_by, uploaded_at, updated_at)
     values ($1, $2, 'a.txt', 'document', 'text/plain', 1, repeat('0', 64), 'processing', 'owner', now(), now())`,
    [documentId, a.tenantId],
  );
  await t.sql(`insert into document_collections (document_id, collection_id, tenant_id, created_at) values ($1, $2, $3, now())`, [documentId, collectionId, a.tenantId]);
  await t.sql(
    `insert into ingestion_jobs (id, tenant_id, document_id, name, status, progress, options, created_by, created_at) values ($1, $2, $3, 'a.txt', 'pending', 0, '{}', 'owner', now())`,
    [ingestionJobId, a.tenantId, documentId],
  );
  const namedKey = await t.api.post('/dashboard/api-keys', { name: 'a-named', preset: 'read-only' }, { headers: bearer(a.token) });
  expect(namedKey.status).toBe(201);
  // Tenant A's agent, deployed and run once; tenant B has an agent of its own (a draft).
  const aKey = { headers: bearer(a.apiKey) };
  expect((await t.api.post('/v1/agents', { agent_key: 'a-agent', name: 'A agent', goal: 'Help A' }, aKey)).status).toBe(201);
  expect((await t.api.post('/v1/agents/a-agent/deploy', undefined, aKey)).status).toBe(200);
  const agentRun = await t.api.post('/v1/agents/a-agent/run', { input: { message: 'Hello from A' } }, aKey);
  expect(agentRun.status, agentRun.text).toBe(200);
  expect((await t.api.post('/v1/agents', { agent_key: B_AGENT_KEY, name: 'B agent', goal: 'Help B' }, { headers: bearer(b.apiKey) })).status).toBe(201);
  const workflow = await t.api.post('/v1/workflows', {
    name: 'A flow',
    steps: [
      { id: 'start', step_type: 'trigger', config: { trigger_subtype: 'manual' } },
      { id: 'save', step_type: 'action', action_id: 'set_state', config: { key: 'counter', value: 1 } },
      { id: 'done', step_type: 'end', config: { output: {} } },
    ],
  }, aKey);
  expect(workflow.status, workflow.text).toBe(201);
  expect((await t.api.post(`/v1/workflows/${workflow.body.data.workflow.id}/deploy`, undefined, aKey)).status).toBe(200);
  const workflowRun = await t.api.post(`/v1/workflows/${workflow.body.data.workflow.id}/run`, { input: {} }, aKey);
  expect(workflowRun.body.data?.status, workflowRun.text).toBe('completed');
  const approvalFlow = await t.api.post('/v1/workflows', {
    name: 'A approval flow',
    steps: [
      { id: 'start', step_type: 'trigger', config: { trigger_subtype: 'manual' } },
      { id: 'ask', step_type: 'approval', config: { message: 'Go on?' } },
      { id: 'done', step_type: 'end', config: { output: {} } },
    ],
  }, aKey);
  expect(approvalFlow.status, approvalFlow.text).toBe(201);
  expect((await t.api.post(`/v1/workflows/${approvalFlow.body.data.workflow.id}/deploy`, undefined, aKey)).status).toBe(200);
  const awaiting = await t.api.post(`/v1/workflows/${approvalFlow.body.data.workflow.id}/run`, { input: {} }, aKey);
  expect(awaiting.body.data?.status, awaiting.text).toBe('awaiting_approval');
  const evalDataset = await t.api.post('/v1/evals/datasets', { name: 'A set', cases: [{ input: { user_id: 'a' } }] }, aKey);
  expect(evalDataset.status, evalDataset.text).toBe(201);
  const evalDatasetId = evalDataset.body.data.dataset.id;
  const evalCaseId = (await t.api.get(`/v1/evals/datasets/${evalDatasetId}`, aKey)).body.data.dataset.cases[0].id;
  const evalSuite = await t.api.post('/v1/evals/suites', { name: 'A suite', domain_key: 'hiring', intent_key: 'resume-analysis', dataset_id: evalDatasetId }, aKey);
  expect(evalSuite.status, evalSuite.text).toBe(201);
  const evalRun = await t.api.post(`/v1/evals/suites/${evalSuite.body.data.suite.id}/run`, {}, aKey);
  expect(evalRun.status, evalRun.text).toBe(202);
  const evalResultId = (await t.api.get(`/v1/evals/runs/${evalRun.body.data.run.id}/results`, aKey)).body.data.results[0].id;
  const evalReview = await t.api.post(`/v1/evals/results/${evalResultId}/reviews`, { verdict: 'flag' }, aKey);
  expect(evalReview.status, evalReview.text).toBe(201);
  const deployment = await t.api.post('/v1/deployments', { project: {} }, aKey);
  expect(deployment.status, deployment.text).toBe(201);
  const subscription = await t.api.post('/v1/event-subscriptions', { url: 'https://events.example.com/a', event_types: ['event.test'] }, aKey);
  expect(subscription.status, subscription.text).toBe(201);
  const subscriptionId = subscription.body.data.subscription.id;
  const tested = await t.api.post(`/v1/event-subscriptions/${subscriptionId}/test`, undefined, aKey);
  expect(tested.status, tested.text).toBe(202);
  const onlineRule = await t.api.post('/v1/evals/online', { name: 'A live', suite_id: evalSuite.body.data.suite.id }, aKey);
  expect(onlineRule.status, onlineRule.text).toBe(201);
  const monitor = await t.api.post('/v1/evals/monitors', { name: 'A watch', rule_id: onlineRule.body.data.rule.id, metric: 'pass_rate', threshold: 0.5 }, aKey);
  expect(monitor.status, monitor.text).toBe(201);
  aIds = {
    onlineRuleId: onlineRule.body.data.rule.id,
    monitorId: monitor.body.data.monitor.id,
    subscriptionId,
    eventId: tested.body.data.event_id,
    deploymentId: deployment.body.data.deployment.id,
    evalRunId: evalRun.body.data.run.id,
    evalResultId,
    evalReviewId: evalReview.body.data.review.id,
    evalDatasetId,
    evalCaseId,
    evalSuiteId: evalSuite.body.data.suite.id,
    workflowId: workflow.body.data.workflow.id,
    workflowKey: workflow.body.data.workflow.workflow_key,
    workflowRunId: workflowRun.body.data.run_id,
    approvalId: awaiting.body.data.approval_id,
    agentKey: 'a-agent',
    agentRunId: agentRun.body.data.run_id,
    agentSessionId: agentRun.body.data.session_id,
    documentId,
    ingestionJobId,
    sessionId,
    domainKey: 'tenant-a-domain',
    intentKey: 'a-intent',
    promptKey: 'a-prompt',
    ownerId: a.userId,
    developerId: invited.body.data.user.id,
    productionEnvironmentId: envId('production'),
    developmentEnvironmentId: envId('development'),
    collectionId,
    namedKeyId: namedKey.body.data.key.id,
  };
});
afterAll(async () => {
  await t?.close();
  await fake?.close();
});

describe('every {param} route', () => {
  it('is listed in the isolation table (add new routes to ROUTES)', async () => {
    const uncovered: string[] = [];
    for (const [template, operations] of await paramRoutes()) {
      if (PLATFORM_ROUTES.test(template)) continue;
      if (!ROUTES[template]) {
        uncovered.push(template);
        continue;
      }
      const names = [...template.matchAll(/\{(\w+)\}/g)].map((m) => m[1]).sort();
      for (const params of ROUTES[template].params(aIds)) expect(Object.keys(params).sort(), template).toEqual(names);
      for (const operation of Object.values(operations)) expect(credentialsFor(operation, b), `${template} needs tenant credentials`).not.toBeNull();
    }
    expect(uncovered).toEqual([]);
    // Entries for routes that no longer exist are stale.
    const served = new Set((await paramRoutes()).map(([template]) => template));
    expect(Object.keys(ROUTES).filter((template) => !served.has(template))).toEqual([]);
  });

  it('answers 404 NOT_FOUND to tenant B for tenant A\'s ids, and changes nothing of A', async () => {
    const auditBefore = await t.sql('select id from audit_log where tenant_id = $1 order by id', [a.tenantId]);
    const keysBefore = await t.sql('select id, revoked_at from api_keys where tenant_id = $1 order by id', [a.tenantId]);
    const agentsBefore = await t.sql('select * from agents where tenant_id = $1 order by id', [a.tenantId]);
    const workflowsBefore = await t.sql('select * from workflows where tenant_id = $1 order by id', [a.tenantId]);
    const workflowRunsBefore = await t.sql('select id, status from workflow_runs order by id');
    const workflowStateBefore = await t.sql('select key, value from workflow_state order by key');
    const agentRowsBefore = await agentActivity();
    const chatCallsBefore = fake.chatRequests().length;
    let calls = 0;
    for (const [template, operations] of await paramRoutes()) {
      if (PLATFORM_ROUTES.test(template) || !ROUTES[template]) continue;
      const route = ROUTES[template];
      for (const [method, operation] of Object.entries(operations)) {
        const headers = credentialsFor(operation, b)!;
        const body = route.bodies?.[method as Method];
        for (const params of route.params(aIds)) {
          const path = fill(template, params);
          const res = await t.api.request(method.toUpperCase(), path, body, { headers });
          expectNotFound(res, `${method.toUpperCase()} ${path} (tenant A's ids, tenant B's credentials)`);
          calls++;
        }
      }
    }
    expect(calls).toBeGreaterThanOrEqual(6);

    // Tenant A is untouched: its users, roles, keys and audit log are as they were.
    const users = await t.api.get('/dashboard/users', { headers: bearer(a.token) });
    expect(users.body.data.users.map((u: { id: string; role: string }) => [u.id, u.role]).sort()).toEqual(
      [[aIds.ownerId, 'owner'], [aIds.developerId, 'developer']].sort(),
    );
    expect(await t.sql('select id, revoked_at from api_keys where tenant_id = $1 order by id', [a.tenantId])).toEqual(keysBefore);
    expect(await t.sql('select id from audit_log where tenant_id = $1 order by id', [a.tenantId])).toEqual(auditBefore);
    expect((await t.api.get('/v1/collections', { headers: bearer(a.apiKey) })).status).toBe(200);
    // A's agent is as it was (still active, same name), and no run, session or message was added anywhere.
    expect(await t.sql('select * from agents where tenant_id = $1 order by id', [a.tenantId])).toEqual(agentsBefore);
    expect(await t.sql('select * from workflows where tenant_id = $1 order by id', [a.tenantId])).toEqual(workflowsBefore);
    expect(await t.sql('select id, status from workflow_runs order by id')).toEqual(workflowRunsBefore);
    expect(await t.sql('select key, value from workflow_state order by key')).toEqual(workflowStateBefore);
    const agent = await t.api.get(`/v1/agents/${aIds.agentKey}`, { headers: bearer(a.apiKey) });
    expect(agent.body.data.agent).toMatchObject({ agent_key: aIds.agentKey, name: 'A agent', status: 'active' });
    expect(await agentActivity()).toEqual(agentRowsBefore);
    expect(fake.chatRequests()).toHaveLength(chatCallsBefore);
  });

  it('answers 404 NOT_FOUND for ids nobody owns and for malformed ids', async () => {
    for (const [template, operations] of await paramRoutes()) {
      if (PLATFORM_ROUTES.test(template) || !ROUTES[template]) continue;
      const names = [...template.matchAll(/\{(\w+)\}/g)].map((m) => m[1]);
      for (const [method, operation] of Object.entries(operations)) {
        const headers = credentialsFor(operation, b)!;
        const body = ROUTES[template].bodies?.[method as Method];
        for (const value of [unknownId(), 'not-an-id', '0']) {
          // Version numbers are numbers: a non-number there is 400 INVALID_INPUT, so use one nobody has.
          const path = fill(template, Object.fromEntries(names.map((n) => [n, NUMERIC_PARAMS.has(n) ? '999999' : value])));
          expectNotFound(await t.api.request(method.toUpperCase(), path, body, { headers }), `${method.toUpperCase()} ${path}`);
        }
      }
    }
  });

  it('tenant A itself reaches its own ids (so the 404s above are about ownership)', async () => {
    const role = await t.api.patch(`/dashboard/users/${aIds.developerId}`, { role: 'viewer' }, { headers: bearer(a.token) });
    expect(role.status).toBe(200);
    expect(role.body.data.user.role).toBe('viewer');
    const rotated = await t.api.post(`/dashboard/environments/${aIds.developmentEnvironmentId}/api-key/rotate`, undefined, { headers: bearer(a.token) });
    expect(rotated.status).toBe(200);
    const aKey = { headers: bearer(a.apiKey) };
    expect((await t.api.get(`/v1/agents/${aIds.agentKey}`, aKey)).status).toBe(200);
    expect((await t.api.get(`/v1/agents/${aIds.agentKey}/runs/${aIds.agentRunId}`, aKey)).body.data.run).toMatchObject({ run_id: aIds.agentRunId, session_id: aIds.agentSessionId });
    const transcript = await t.api.get(`/v1/agents/${aIds.agentKey}/sessions/${aIds.agentSessionId}/transcript`, aKey);
    expect(transcript.status).toBe(200);
    expect(transcript.body.data.turns[0]).toMatchObject({ role: 'user', content: 'Hello from A' });
  });
});

describe('lists show only the caller\'s rows', () => {
  it('/v1/collections lists only the caller\'s collections', async () => {
    const own = await t.api.get('/v1/collections', { headers: bearer(a.apiKey) });
    expect(own.status).toBe(200);
    expect(own.body.data.collections).toEqual([
      expect.objectContaining({ id: aIds.collectionId, slug: 'handbook', label: 'Handbook', domain_keys: ['hiring'], tags: [], visibility: 'workspace' }),
    ]);
    const other = await t.api.get('/v1/collections', { headers: bearer(b.apiKey) });
    expect(other.status).toBe(200);
    expect(other.body).toEqual({ success: true, data: { collections: [] } });

    // The same slug in tenant B is B's own collection; each sees one.
    const bCollection = randomUUID();
    await t.sql(
      `insert into collections (id, tenant_id, slug, label, tags, visibility, created_at, updated_at) values ($1, $2, 'handbook', 'B handbook', '["b"]', 'restricted', now(), now())`,
      [bCollection, b.tenantId],
    );
    await t.sql(`insert into collection_domains (collection_id, domain_key, tenant_id, created_at) values ($1, 'hiring', $2, now())`, [bCollection, b.tenantId]);
    const bList = (await t.api.get('/v1/collections', { headers: { 'x-api-key': b.apiKey } })).body.data.collections;
    expect(bList.map((c: { id: string; label: string }) => [c.id, c.label])).toEqual([[bCollection, 'B handbook']]);
    const aList = (await t.api.get('/v1/collections', { headers: bearer(a.apiKey) })).body.data.collections;
    expect(aList.map((c: { id: string }) => c.id)).toEqual([aIds.collectionId]);
  });

  it('dashboard users, environments and audit log list only the caller\'s rows', async () => {
    const headers = bearer(b.token);
    const users = (await t.api.get('/dashboard/users', { headers })).body.data.users;
    expect(users.map((u: { id: string }) => u.id)).toEqual([b.userId]);
    const envs = (await t.api.get('/dashboard/environments', { headers })).body.data.environments;
    const bEnvs = await t.sql<{ id: string }>('select id from environments where tenant_id = $1', [b.tenantId]);
    expect(envs.map((e: { id: string }) => e.id).sort()).toEqual(bEnvs.map((r) => r.id).sort());
    expect(envs.map((e: { id: string }) => e.id)).not.toContain(aIds.productionEnvironmentId);
    const audit = (await t.api.get('/dashboard/audit-log?pageSize=100', { headers })).body.data;
    const aAudit = await t.sql<{ id: string }>('select id from audit_log where tenant_id = $1', [a.tenantId]);
    expect(aAudit.length).toBeGreaterThan(0);
    const aAuditIds = new Set(aAudit.map((r) => r.id));
    expect(audit.entries.filter((e: { id: string }) => aAuditIds.has(e.id))).toEqual([]);
    const [{ n }] = await t.sql<{ n: number }>('select count(*)::int as n from audit_log where tenant_id = $1', [b.tenantId]);
    expect(audit.pagination.total).toBe(n);
  });

  it('credentials of one kind do not open the other kind of route', async () => {
    const jwtOnV1 = await t.api.get('/v1/collections', { headers: bearer(b.token) });
    expect(jwtOnV1.status).toBe(401);
    expect(jwtOnV1.body.error.code).toBe('INVALID_API_KEY_FORMAT');
    const keyOnDashboard = await t.api.get('/dashboard/users', { headers: bearer(b.apiKey) });
    expect(keyOnDashboard.status).toBe(401);
    expect(keyOnDashboard.body.error.code).toBe('INVALID_TOKEN');
    const keyOnAdmin = await t.api.get(`/admin/tenants/${b.tenantId}`, { headers: { 'x-admin-secret': b.apiKey } });
    expect(keyOnAdmin.status).toBe(401);
    expect(keyOnAdmin.body.error.code).toBe('ADMIN_UNAUTHORIZED');
    expect((await t.api.get(`/admin/tenants/${b.tenantId}`, { headers: adminHeaders })).status).toBe(200);
  });
});
