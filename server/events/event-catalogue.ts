// The event catalogue: every type a subscription can receive, with its payload (version 1). The
// database triggers that record events (the events migrations) build these payloads; this module
// documents them (GET /v1/event-types and the `webhooks` section of the OpenAPI document) and the
// tests check every recorded payload against its schema. A payload only grows within a version:
// a field is never removed or retyped without a new version.
import { z } from 'zod';

const id = (what: string) => z.string().describe(what);
const isoTime = (what: string) => z.string().describe(`${what} (ISO 8601, UTC)`);
const errorSchema = z
  .object({ code: z.string(), message: z.string() })
  .describe('Why it failed: the error code and message the API shows for it');

const workflowRun = z.object({
  run_id: id('The workflow run'),
  workflow_id: id('Its workflow'),
  workflow_key: z.string(),
  version: z.number().int().optional().describe('The deployed version run (absent for a builder test run)'),
  scope: z.enum(['live', 'test']),
  status: z.string().describe('The run\'s status when the event was recorded'),
  triggered_by: z.string().describe('manual, webhook, schedule, event, api, agent …'),
  error: errorSchema.optional(),
  started_at: isoTime('When the run started'),
  completed_at: isoTime('When it ended').optional(),
});

const approval = z.object({
  approval_id: id('The approval'),
  run_id: id('The waiting workflow run'),
  workflow_id: z.string(),
  workflow_key: z.string(),
  step_id: z.string(),
  message: z.string().describe('What the approver is asked'),
  expires_at: isoTime('When it times out').optional(),
  created_at: isoTime('When it was requested'),
});

const agentRun = z.object({
  run_id: id('The agent run'),
  agent_key: z.string(),
  session_id: z.string(),
  status: z.string().describe('running, completed, max_steps_reached, guardrail_blocked, needs_input, failed, cancelled or budget_exhausted'),
  model: z.string().optional(),
  steps: z.number().int().describe('Model calls so far'),
  total_tokens: z.number().int(),
  total_cost_usd: z.number(),
  error: errorSchema.optional(),
  started_at: isoTime('When the run started'),
  completed_at: isoTime('When it ended').optional(),
});

const monitorChange = z.object({
  monitor_id: id('The monitor'),
  name: z.string(),
  rule_id: z.string().describe('Its online rule'),
  metric: z.string().describe('mean_score, pass_rate, check_failure_rate, cost_usd or latency_ms'),
  direction: z.string().describe('below (alerts on a drop) or above (on a rise)'),
  threshold: z.number(),
  value: z.number().nullable().describe('The metric over the window'),
  bound: z.number().nullable().describe('The confidence bound compared with the threshold'),
  samples: z.number().int(),
  window_minutes: z.number().int(),
  at: isoTime('When it changed'),
});

const evalRun = z.object({
  run_id: id('The evaluation run'),
  suite_id: z.string().optional(),
  name: z.string().optional(),
  domain: z.string().optional(),
  intent: z.string().optional(),
  status: z.enum(['completed', 'failed']),
  mean_score: z.number().optional(),
  cases_total: z.number().int(),
  cases_passed: z.number().int(),
  pass_rate: z.number().optional().describe('cases_passed / cases_total (absent with no cases)'),
  judge_cost_usd: z.number(),
  error: errorSchema.optional(),
  started_at: isoTime('When the run started'),
  completed_at: isoTime('When it ended').optional(),
});

const deployment = z.object({
  deployment_id: id('The deployment'),
  status: z.enum(['deployed', 'gate_failed', 'failed']),
  prune: z.boolean(),
  gate: z.array(z.object({ suite: z.string(), run_id: z.string(), model: z.string().nullish() })).describe('The gate\'s suites and their eval runs'),
  min_pass_rate: z.number(),
  error: errorSchema.optional(),
  created_by: z.string().optional(),
  created_at: isoTime('When it was planned'),
  published_at: isoTime('When it was published').optional(),
});

const ingestion = z.object({
  job_id: id('The ingestion job'),
  document_id: z.string().optional(),
  name: z.string().describe('The document\'s name'),
  source_type: z.string(),
  status: z.enum(['completed', 'failed']),
  result: z.record(z.string(), z.unknown()).optional().describe('What the job made (chunks, pages …)'),
  error: errorSchema.optional(),
  created_at: isoTime('When it was queued'),
  completed_at: isoTime('When it ended').optional(),
});

const apiKey = z.object({
  key_id: id('The key'),
  name: z.string().optional().describe('A named key\'s name (absent for an environment\'s key)'),
  key_preview: z.string().describe('The key\'s visible prefix, as lists show it (never the secret)'),
  environment: z.string().optional(),
  permissions: z.array(z.string()).optional().describe('A named key\'s permissions (absent: its environment\'s)'),
  expires_at: isoTime('When it stops working').optional(),
  created_by: z.string().optional(),
  created_at: isoTime('When it was created'),
  revoked_at: isoTime('When it was revoked').optional(),
});

const quota = z.object({
  quota: z.enum(['requests', 'tokens']),
  month: z.string().describe('YYYY-MM'),
  limit: z.number().int(),
  used: z.number().int().describe('Used this month when the mark was passed'),
  percent: z.union([z.literal(80), z.literal(100)]),
});

export interface EventTypeSpec {
  /** What happened, for the catalogue. */
  readonly description: string;
  readonly data: z.ZodType;
  /** What a subscription's filter can match: the event carries that field. */
  readonly filters: readonly ('domain' | 'workflow_id' | 'agent_key')[];
  /** Delivered only to subscriptions that name the type (high volume). */
  readonly optIn?: boolean;
}

/** Every event type, in catalogue order. */
export const EVENT_TYPES = {
  'workflow.run.started': { description: 'A workflow run started (any trigger; builder test runs have scope test).', data: workflowRun, filters: ['workflow_id'] },
  'workflow.run.completed': { description: 'A workflow run ended as designed: completed, or rejected by its approver (status says which).', data: workflowRun, filters: ['workflow_id'] },
  'workflow.run.failed': { description: 'A workflow run failed; error says why.', data: workflowRun, filters: ['workflow_id'] },
  'workflow.run.cancelled': { description: 'A workflow run was cancelled.', data: workflowRun, filters: ['workflow_id'] },
  'workflow.run.waiting': {
    description: 'A workflow run is waiting on a callback (a wait_for_callback step); timeout_at is when it gives up.',
    data: workflowRun.extend({ step_id: z.string(), wait: z.literal('callback'), callback_seq: z.number().int(), timeout_at: isoTime('When the wait times out').optional() }),
    filters: ['workflow_id'],
  },
  'approval.requested': { description: 'A workflow run waits for a person\'s approval.', data: approval, filters: ['workflow_id'] },
  'approval.decided': {
    description: 'An approval was decided (approved or rejected), timed out or was cancelled with its run.',
    data: approval.extend({ decision: z.enum(['approved', 'rejected', 'timed_out', 'cancelled']), decided_by: z.string().optional(), comment: z.string().optional(), decided_at: isoTime('When') }),
    filters: ['workflow_id'],
  },
  'agent.run.started': { description: 'An agent run started (through the API, a workflow\'s ai_agent step or another agent).', data: agentRun, filters: ['agent_key'] },
  'agent.run.completed': { description: 'An agent run ended with an answer or a designed stop: completed, max_steps_reached, guardrail_blocked or needs_input.', data: agentRun, filters: ['agent_key'] },
  'agent.run.failed': { description: 'An agent run failed, was cancelled or ran out of budget (status says which).', data: agentRun, filters: ['agent_key'] },
  'budget.exhausted': {
    description: 'A run stopped because its next model call could pass its cost budget (behavior_config.max_cost_usd, shared by the runs it started).',
    data: z.object({ run_kind: z.literal('agent'), run_id: z.string(), agent_key: z.string(), max_cost_usd: z.number().optional(), cost_usd: z.number(), error: errorSchema.optional() }),
    filters: ['agent_key'],
  },
  'eval.run.completed': { description: 'An evaluation run finished scoring its cases.', data: evalRun, filters: ['domain'] },
  'eval.run.failed': { description: 'An evaluation run failed; error says why.', data: evalRun, filters: ['domain'] },
  'eval.monitor.fired': {
    description: 'An online evaluation monitor fired: its metric passed the threshold with the whole confidence interval, over at least its minimum samples.',
    data: monitorChange,
    filters: [],
  },
  'eval.monitor.resolved': {
    description: 'A firing online evaluation monitor resolved: its whole confidence interval is back on the good side of the threshold.',
    data: monitorChange,
    filters: [],
  },
  'eval.gate.passed': { description: 'Every gate suite of a deployment passed and the deployment was published.', data: deployment, filters: [] },
  'eval.gate.failed': { description: 'A gate suite of a deployment missed its thresholds; nothing was deployed.', data: deployment, filters: [] },
  'deployment.published': { description: 'A deployment was published: its plan is live.', data: deployment, filters: [] },
  'deployment.failed': { description: 'A deployment ended without publishing (its gate failed, or the server changed since its plan).', data: deployment, filters: [] },
  'ingestion.completed': { description: 'A document was ingested: chunked, embedded and searchable.', data: ingestion, filters: [] },
  'ingestion.failed': { description: 'A document\'s ingestion failed; error says why.', data: ingestion, filters: [] },
  'quota.warning': { description: 'This month\'s use passed 80% of a monthly quota (requests or tokens); once per month and quota.', data: quota, filters: [] },
  'quota.exhausted': { description: 'This month\'s use reached a monthly quota: runs answer 429 QUOTA_EXCEEDED until the month ends; once per month and quota.', data: quota, filters: [] },
  'key.created': { description: 'An API key was created (a named key, or an environment\'s key on rotation).', data: apiKey, filters: [] },
  'key.revoked': { description: 'An API key was revoked: it stopped working.', data: apiKey, filters: [] },
  'provider.breaker.opened': {
    description: 'The platform\'s model provider stopped taking calls for a while: its breaker opened after most recent calls failed (runs use their fallbacks meanwhile, or answer 503 LLM_UNAVAILABLE). Sent to every tenant that subscribes; a tenant\'s own provider key is not covered.',
    data: z.object({ provider: z.string(), credential: z.literal('platform'), open_until: isoTime('When a probe call may close it') }),
    filters: [],
  },
  'provider.breaker.closed': {
    description: 'The platform\'s model provider answers again: a probe call after the cool-down succeeded and its breaker closed.',
    data: z.object({ provider: z.string(), credential: z.literal('platform') }),
    filters: [],
  },
  'intent.run.completed': {
    description: 'An intent run answered (opt-in: only subscriptions that list this type receive it; one event per run).',
    data: z.object({
      message_id: z.string().describe('The answer\'s message id (the run\'s metadata.message_id)'),
      session_id: z.string(),
      domain: z.string(),
      intent: z.string(),
      model: z.string().optional(),
      tokens: z.number().int(),
      cost_usd: z.number(),
      latency_ms: z.number().int(),
      cached: z.boolean(),
      created_at: isoTime('When it answered'),
    }),
    filters: ['domain'],
    optIn: true,
  },
  'event.test': {
    description: 'Sent by POST /v1/event-subscriptions/{id}/test to that subscription alone, to check the receiver and its signature.',
    data: z.object({ subscription_id: z.string(), message: z.string() }),
    filters: [],
  },
} as const satisfies Record<string, EventTypeSpec>;

export type EventType = keyof typeof EVENT_TYPES;
export const EVENT_TYPE_NAMES = Object.keys(EVENT_TYPES) as EventType[];
/** The payload version every type is at. */
export const EVENT_VERSION = 1;

/** The body of every delivery: the Standard Webhooks payload shape (type, timestamp, data) with the event's id and version. */
export function eventEnvelopeSchema(type: EventType) {
  return z.object({
    id: z.string().describe('The event id: also the webhook-id header, the same on every attempt and replay (deduplicate on it)'),
    type: z.literal(type),
    version: z.literal(EVENT_VERSION),
    timestamp: isoTime('When the change happened (the event was recorded in its transaction)'),
    tenant_id: z.string(),
    data: EVENT_TYPES[type].data,
  });
}

const bodySchemas = new Map<EventType, Record<string, unknown>>();
/** The JSON Schema of `type`'s delivery body (built once). */
export function eventBodyJsonSchema(type: EventType): Record<string, unknown> {
  let schema = bodySchemas.get(type);
  if (!schema) {
    schema = z.toJSONSchema(eventEnvelopeSchema(type), { io: 'output', unrepresentable: 'any' }) as Record<string, unknown>;
    bodySchemas.set(type, schema);
  }
  return schema;
}

/**
 * The catalogue as the OpenAPI 3.1 `webhooks` object: one POST per type, with the Standard Webhooks
 * headers and the body's schema, so generated clients get a type per event.
 */
export function eventWebhooksDocument(): Record<string, unknown> {
  const header = (name: string, description: string) => ({ name, in: 'header', required: true, description, schema: { type: 'string' } });
  return Object.fromEntries(
    EVENT_TYPE_NAMES.map((type) => [
      type,
      {
        post: {
          operationId: `event_${type.replaceAll('.', '_')}`,
          tags: ['Events out'],
          summary: EVENT_TYPES[type].description,
          description: `Version ${EVENT_VERSION}.${'optIn' in EVENT_TYPES[type] ? ' Opt-in: only subscriptions that name this type receive it.' : ''} Filters: ${EVENT_TYPES[type].filters.join(', ') || 'none'}.`,
          parameters: [
            header('webhook-id', 'The event id: the same on every attempt and replay (deduplicate on it)'),
            header('webhook-timestamp', 'Seconds since the epoch when this attempt was signed'),
            header('webhook-signature', '`v1,<base64 HMAC-SHA256>` of `<webhook-id>.<webhook-timestamp>.<body>`, space-separated when two secrets sign (a rotation\'s grace)'),
          ],
          requestBody: { required: true, content: { 'application/json': { schema: eventBodyJsonSchema(type) } } },
          responses: {
            '200': { description: 'Any 2xx: delivered' },
            '410': { description: 'Gone: the subscription is paused at once' },
            default: { description: 'Anything else, or no answer in time: retried by the schedule' },
          },
        },
      },
    ]),
  );
}
