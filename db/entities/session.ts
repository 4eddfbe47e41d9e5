import { defineEntity, p, type InferEntity } from '@mikro-orm/core';
import { Tenant } from './tenant.js';
import { SESSION_STATUSES } from '../column-values.js';


/** A conversation of one end user (`input.user_id`) with the intents of one domain. */
export const Session = defineEntity({
  name: 'Session',
  tableName: 'sessions',
  indexes: [
    // The list, most recently active first, paged by keyset: no filter, status, domain.
    { name: 'sessions_tenant_id_last_activity_at_id_index', expression: `create index "sessions_tenant_id_last_activity_at_id_index" on "sessions" ("tenant_id", "last_activity_at" desc, "id" desc)` },
    { name: 'sessions_tenant_id_status_last_activity_at_id_index', expression: `create index "sessions_tenant_id_status_last_activity_at_id_index" on "sessions" ("tenant_id", "status", "last_activity_at" desc, "id" desc)` },
    { name: 'sessions_tenant_id_domain_last_activity_at_id_index', expression: `create index "sessions_tenant_id_domain_last_activity_at_id_index" on "sessions" ("tenant_id", "domain", "last_activity_at" desc, "id" desc)` },
    // Expiring idle sessions, across tenants.
    { properties: ['status', 'lastActivityAt'] },
    // Erasing one end user's sessions (db/migrations/...140400_erasure).
    { properties: ['tenant', 'userId'] },
  ],
  properties: {
    id: p.uuid().primary().defaultRaw('gen_random_uuid()'),
    tenant: () => p.manyToOne(Tenant).deleteRule('cascade'),
    userId: p.string().length(200),
    domain: p.string().length(100),
    intent: p.string().length(100).nullable(),
    status: p.enum(SESSION_STATUSES).default('active'),
    messageCount: p.integer().default(0),
    tokensUsed: p.integer().default(0),
    costUsd: p.decimal('string').precision(14).scale(6).default('0'),
    lastActivityAt: p.datetime(),
    createdAt: p.datetime().onCreate(() => new Date()),
  },
});
export type ISession = InferEntity<typeof Session>;

/**
 * One message of an intent session. Partitioned by month of created_at, like usage_events: the
 * primary key is (id, created_at), the ORM keys rows by id (a lookup by id alone probes every
 * partition) and the schema diff skips the table (db/orm.ts).
 */
export const SessionMessage = defineEntity({
  name: 'SessionMessage',
  tableName: 'session_messages',
  indexes: [{ properties: ['session', 'createdAt'] }],
  properties: {
    id: p.uuid().primary().defaultRaw('gen_random_uuid()'),
    // The session's tenant, kept on each message for tenant-scoped reads. No foreign key of its own:
    // the session's (cascading from the tenant) already ties every message to an existing tenant,
    // and a second key cost two checks and an index entry on every intent run's write.
    tenant: () => p.manyToOne(Tenant).createForeignKeyConstraint(false),
    session: () => p.manyToOne(Session).deleteRule('cascade'),
    role: p.enum(['user', 'assistant'] as const),
    intent: p.string().length(100).nullable(),
    content: p.json<unknown>(),
    model: p.string().length(200).nullable(),
    tokens: p.integer().default(0),
    costUsd: p.decimal('string').precision(14).scale(6).default('0'),
    latencyMs: p.integer().default(0),
    cached: p.boolean().default(false),
    createdAt: p.datetime().onCreate(() => new Date()),
  },
});
export type ISessionMessage = InferEntity<typeof SessionMessage>;

/** Cached intent outputs keyed by tenant + intent version + normalised input. */
export const IntentCacheEntry = defineEntity({
  name: 'IntentCacheEntry',
  tableName: 'intent_cache',
  properties: {
    cacheKey: p.string().length(64).primary(),
    tenant: () => p.manyToOne(Tenant).deleteRule('cascade').index(),
    output: p.json<unknown>(),
    model: p.string().length(200),
    expiresAt: p.datetime().index(),
    createdAt: p.datetime().onCreate(() => new Date()),
  },
});

/** A tenant's own key for a named model provider, encrypted at rest (AES-256-GCM). */
export const TenantProviderKey = defineEntity({
  name: 'TenantProviderKey',
  tableName: 'tenant_provider_keys',
  uniques: [{ properties: ['tenant', 'provider'] }],
  properties: {
    id: p.uuid().primary().defaultRaw('gen_random_uuid()'),
    tenant: () => p.manyToOne(Tenant).deleteRule('cascade'),
    provider: p.string().length(64),
    encryptedKey: p.text(),
    keyPreview: p.string().length(32),
    createdAt: p.datetime().onCreate(() => new Date()),
    updatedAt: p.datetime().onCreate(() => new Date()).onUpdate(() => new Date()),
  },
});
