import { defineEntity, p, type InferEntity } from '@mikro-orm/core';
import { TENANT_TYPES, BILLING_PLANS } from '../column-values.js';


export const Tenant = defineEntity({
  name: 'Tenant',
  tableName: 'tenants',
  properties: {
    id: p.uuid().primary().defaultRaw('gen_random_uuid()'),
    name: p.string().length(200),
    type: p.enum(TENANT_TYPES).default('trial'),
    plan: p.enum(BILLING_PLANS).default('trial'),
    billingEmail: p.string().length(320).nullable(),
    isActive: p.boolean().default(true),
    enabledDomains: p.json<string[]>().defaultRaw(`'["hiring"]'`),
    monthlyRequestQuota: p.integer().nullable(),
    monthlyTokenQuota: p.bigint('string').nullable(),
    // Model used when an intent names none (null: the platform default).
    defaultModel: p.string().length(200).nullable(),
    /** Models that serve, in order, when a call's model fails or cools down (null: the platform's LLM_FALLBACK_MODELS). */
    modelFallbacks: p.json<string[]>().nullable(),
    // Built-in intents switched off for this tenant, as `domain/intent` (-> 403 INTENT_NOT_PERMITTED).
    disabledIntents: p.json<string[]>().defaultRaw(`'[]'`),
    // Guardrails applied to intents that set none of their own (null: platform defaults).
    guardrailsConfig: p.json<Record<string, unknown>>().nullable(),
    /** The tenant's monthly cap on online judging in USD (null: the plan's default for it). */
    onlineJudgeBudgetUsd: p.decimal('number').precision(14).scale(6).nullable(),
    createdAt: p.datetime().onCreate(() => new Date()),
    updatedAt: p.datetime().onCreate(() => new Date()).onUpdate(() => new Date()),
  },
});
export type ITenant = InferEntity<typeof Tenant>;

export const Environment = defineEntity({
  name: 'Environment',
  tableName: 'environments',
  uniques: [{ properties: ['tenant', 'name'] }],
  properties: {
    id: p.uuid().primary().defaultRaw('gen_random_uuid()'),
    tenant: () => p.manyToOne(Tenant).deleteRule('cascade'),
    name: p.string().length(64),
    // What the environment's keys may do (server/keys/permissions.ts); null: every permission.
    permissions: p.json<string[]>().nullable(),
    createdAt: p.datetime().onCreate(() => new Date()),
  },
});
export type IEnvironment = InferEntity<typeof Environment>;

export const ApiKey = defineEntity({
  name: 'ApiKey',
  tableName: 'api_keys',
  indexes: [
    // A named key's name is unique among the tenant's keys that still work.
    { name: 'api_keys_tenant_name_unique', expression: `create unique index "api_keys_tenant_name_unique" on "api_keys" ("tenant_id", "name") where "name" is not null and "revoked_at" is null` },
  ],
  properties: {
    id: p.uuid().primary().defaultRaw('gen_random_uuid()'),
    tenant: () => p.manyToOne(Tenant).deleteRule('cascade').index(),
    environment: () => p.manyToOne(Environment).deleteRule('cascade').nullable().index(),
    keyHash: p.string().length(64).unique(),
    keyPreview: p.string().length(32),
    // A named key: its name and own permissions (within its environment's). An environment's own
    // key has neither: it holds whatever its environment may do.
    name: p.string().length(64).nullable(),
    permissions: p.json<string[]>().nullable(),
    expiresAt: p.datetime().nullable(),
    /** Who created a named key (the dashboard user's e-mail). */
    createdBy: p.string().length(320).nullable(),
    createdAt: p.datetime().onCreate(() => new Date()),
    revokedAt: p.datetime().nullable(),
    lastUsedAt: p.datetime().nullable(),
  },
});
export type IApiKey = InferEntity<typeof ApiKey>;

/** Platform-wide values the server generates once and shares between processes (e.g. a JWT secret). */
export const PlatformSetting = defineEntity({
  name: 'PlatformSetting',
  tableName: 'platform_settings',
  properties: {
    key: p.string().length(100).primary(),
    value: p.text(),
    createdAt: p.datetime().onCreate(() => new Date()),
  },
});
