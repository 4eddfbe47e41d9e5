import { defineEntity, p, type InferEntity } from '@mikro-orm/core';
import { Tenant } from './tenant.js';

type Json = Record<string, unknown>;

/** A tenant's own domain of intents. Enabled for the tenant while `isActive`. */
export const CustomDomain = defineEntity({
  name: 'CustomDomain',
  tableName: 'custom_domains',
  uniques: [{ properties: ['tenant', 'domainKey'] }],
  properties: {
    id: p.uuid().primary().defaultRaw('gen_random_uuid()'),
    tenant: () => p.manyToOne(Tenant).deleteRule('cascade'),
    domainKey: p.string().length(100),
    displayName: p.string().length(200),
    description: p.text().nullable(),
    isActive: p.boolean().default(true),
    sortOrder: p.integer().default(0),
    createdAt: p.datetime().onCreate(() => new Date()),
    updatedAt: p.datetime().onCreate(() => new Date()).onUpdate(() => new Date()),
  },
});
export type ICustomDomain = InferEntity<typeof CustomDomain>;

/** The live definition of a custom intent; every explicit save also writes an IntentVersion. */
export const CustomIntent = defineEntity({
  name: 'CustomIntent',
  tableName: 'custom_intents',
  uniques: [{ properties: ['tenant', 'domainKey', 'intentKey'] }],
  properties: {
    id: p.uuid().primary().defaultRaw('gen_random_uuid()'),
    tenant: () => p.manyToOne(Tenant).deleteRule('cascade'),
    domain: () => p.manyToOne(CustomDomain).deleteRule('cascade').index(),
    domainKey: p.string().length(100),
    intentKey: p.string().length(100),
    displayName: p.string().length(200),
    description: p.text().nullable(),
    promptTemplate: p.text(),
    promptBinding: p.json<Json>().nullable(),
    outputSchema: p.json<Json>().nullable(),
    inputSchema: p.json<Json>().nullable(),
    guardrailsConfig: p.json<Json>().nullable(),
    agentConfig: p.json<Json>().nullable(),
    executionConfig: p.json<Json>().nullable(),
    retrievalConfig: p.json<Json>().nullable(),
    cacheConfig: p.json<Json>().nullable(),
    sortOrder: p.integer().default(0),
    isActive: p.boolean().default(true),
    currentVersion: p.integer().default(0),
    createdAt: p.datetime().onCreate(() => new Date()),
    updatedAt: p.datetime().onCreate(() => new Date()).onUpdate(() => new Date()),
  },
});
export type ICustomIntent = InferEntity<typeof CustomIntent>;

/** An immutable snapshot of a custom intent's full definition. */
export const IntentVersion = defineEntity({
  name: 'IntentVersion',
  tableName: 'intent_versions',
  uniques: [{ properties: ['intent', 'versionNumber'] }],
  indexes: [{ properties: ['tenant', 'createdAt'] }],
  properties: {
    id: p.uuid().primary().defaultRaw('gen_random_uuid()'),
    tenant: () => p.manyToOne(Tenant).deleteRule('cascade'),
    intent: () => p.manyToOne(CustomIntent).deleteRule('cascade'),
    versionNumber: p.integer(),
    definition: p.json<Json>(),
    changedFields: p.json<string[]>(),
    changeType: p.enum(['create', 'update', 'restore'] as const),
    restoredFromVersion: p.integer().nullable(),
    createdBy: p.string().length(64).nullable(),
    actorName: p.string().length(320).nullable(),
    createdAt: p.datetime().onCreate(() => new Date()),
  },
});
export type IIntentVersion = InferEntity<typeof IntentVersion>;

/** A named prompt in the tenant's prompt library; intents can bind to one of its versions. */
export const Prompt = defineEntity({
  name: 'Prompt',
  tableName: 'prompts',
  uniques: [{ properties: ['tenant', 'promptKey'] }],
  properties: {
    id: p.uuid().primary().defaultRaw('gen_random_uuid()'),
    tenant: () => p.manyToOne(Tenant).deleteRule('cascade'),
    promptKey: p.string().length(100),
    name: p.string().length(200),
    description: p.text().nullable(),
    latestVersion: p.integer().default(0),
    createdAt: p.datetime().onCreate(() => new Date()),
    updatedAt: p.datetime().onCreate(() => new Date()).onUpdate(() => new Date()),
  },
});
export type IPrompt = InferEntity<typeof Prompt>;

export const PromptVersion = defineEntity({
  name: 'PromptVersion',
  tableName: 'prompt_versions',
  uniques: [{ properties: ['prompt', 'versionNumber'] }],
  properties: {
    id: p.uuid().primary().defaultRaw('gen_random_uuid()'),
    tenant: () => p.manyToOne(Tenant).deleteRule('cascade').index(),
    prompt: () => p.manyToOne(Prompt).deleteRule('cascade'),
    versionNumber: p.integer(),
    template: p.text(),
    note: p.text().nullable(),
    createdBy: p.string().length(64).nullable(),
    createdAt: p.datetime().onCreate(() => new Date()),
  },
});
