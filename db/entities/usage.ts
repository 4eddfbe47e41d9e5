import { defineEntity, p } from '@mikro-orm/core';
import { Tenant } from './tenant.js';

/**
 * One metered operation (an intent run, an agent step, an embedding batch, ...). The table is
 * partitioned by month of created_at (Migration20261128140000_partition_history, upkeep in
 * server/maintenance/partitions.ts): its primary key is (id, created_at), which the ORM does not
 * model (it keys rows by id; a lookup by id alone probes every partition). The schema diff skips the
 * table (db/orm.ts): its partitions are made by migrations and the maintenance job, never diffed.
 */
export const UsageEvent = defineEntity({
  name: 'UsageEvent',
  tableName: 'usage_events',
  indexes: [
    { properties: ['tenant', 'createdAt'] },
    // A report's partial first or last day across every tenant; BRIN because events arrive in time
    // order and a B-tree would add one more entry to every metered insert.
    { name: 'usage_events_created_at_brin', expression: `create index "usage_events_created_at_brin" on "usage_events" using brin ("created_at") with (autosummarize = on)` },
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

/**
 * Usage per tenant, UTC day and (kind, domain, intent, model, environment): what reports, platform
 * statistics and the judge budget read. Written only by the usage_events_daily_rollup trigger (see
 * server/usage/store/usage-events.ts); never deleted by retention, so the totals outlive the events.
 */
export const UsageDaily = defineEntity({
  name: 'UsageDaily',
  tableName: 'usage_daily',
  indexes: [{ properties: ['day'] }],
  uniques: [
    {
      name: 'usage_daily_key',
      expression: `create unique index "usage_daily_key" on "usage_daily" ("tenant_id", "day", "kind", "domain", "intent", "model", "environment_id") nulls not distinct`,
    },
  ],
  properties: {
    id: p.uuid().primary().defaultRaw('gen_random_uuid()'),
    tenant: () => p.manyToOne(Tenant).deleteRule('cascade'),
    day: p.date(),
    kind: p.string().length(64),
    domain: p.string().length(100).nullable(),
    intent: p.string().length(100).nullable(),
    model: p.string().length(200).nullable(),
    environmentId: p.uuid().nullable(),
    /** Events that count against the monthly request quota. */
    requests: p.bigint('string').default('0'),
    events: p.bigint('string').default('0'),
    promptTokens: p.bigint('string').default('0'),
    completionTokens: p.bigint('string').default('0'),
    totalTokens: p.bigint('string').default('0'),
    costUsd: p.decimal('string').precision(20).scale(6).default('0'),
    latencyMs: p.bigint('string').default('0'),
  },
});
