import { defineEntity, p } from '@mikro-orm/core';
import { Tenant } from './tenant.js';

/** One metered operation (an intent run, an agent step, an embedding batch, ...). */
export const UsageEvent = defineEntity({
  name: 'UsageEvent',
  tableName: 'usage_events',
  indexes: [
    { properties: ['tenant', 'createdAt'] },
    // This month's judge spend of a tenant (the evaluations budget).
    { name: 'usage_events_eval_judge_index', expression: `create index "usage_events_eval_judge_index" on "usage_events" ("tenant_id", "created_at") where "kind" = 'eval_judge'` },
  ],
  properties: {
    id: p.uuid().primary().defaultRaw('gen_random_uuid()'),
    tenant: () => p.manyToOne(Tenant).deleteRule('cascade'),
    environmentId: p.uuid().nullable(),
    kind: p.string().length(64),
    domain: p.string().length(100).nullable(),
    intent: p.string().length(100).nullable(),
    model: p.string().length(200).nullable(),
    promptTokens: p.integer().default(0),
    completionTokens: p.integer().default(0),
    totalTokens: p.integer().default(0),
    costUsd: p.decimal('string').precision(14).scale(6).default('0'),
    latencyMs: p.integer().default(0),
    status: p.string().length(32).default('ok'),
    // Whether the event counts against the monthly request quota (an embedding batch does not).
    countsAsRequest: p.boolean().default(true),
    createdAt: p.datetime().onCreate(() => new Date()),
  },
});

/** Running monthly totals per tenant, kept in step with usage_events in the same transaction. */
export const UsageCounter = defineEntity({
  name: 'UsageCounter',
  tableName: 'usage_counters',
  properties: {
    tenant: () => p.manyToOne(Tenant).deleteRule('cascade').primary(),
    month: p.string().length(7).primary(),
    requests: p.bigint('string').default('0'),
    tokens: p.bigint('string').default('0'),
    costUsd: p.decimal('string').precision(16).scale(6).default('0'),
  },
});
