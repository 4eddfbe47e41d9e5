import { defineEntity, p, type InferEntity } from '@mikro-orm/core';
import { Tenant } from './tenant.js';

export const Collection = defineEntity({
  name: 'Collection',
  tableName: 'collections',
  uniques: [{ properties: ['tenant', 'slug'] }],
  properties: {
    id: p.uuid().primary().defaultRaw('gen_random_uuid()'),
    tenant: () => p.manyToOne(Tenant).deleteRule('cascade'),
    slug: p.string().length(100),
    label: p.string().length(200),
    color: p.string().length(16).nullable(),
    tags: p.json<string[]>().defaultRaw(`'[]'`),
    visibility: p.enum(['workspace', 'restricted'] as const).default('workspace'),
    retrievalConfig: p.json<Record<string, unknown>>().nullable(),
    defaultEmbeddingModel: p.string().length(200).nullable(),
    defaultChunkingStrategy: p.string().length(32).nullable(),
    defaultChunkSize: p.integer().nullable(),
    defaultChunkOverlap: p.integer().nullable(),
    lastSyncedAt: p.datetime().nullable(),
    createdAt: p.datetime().onCreate(() => new Date()),
    updatedAt: p.datetime().onCreate(() => new Date()).onUpdate(() => new Date()),
  },
});
export type ICollection = InferEntity<typeof Collection>;

export const CollectionDomain = defineEntity({
  name: 'CollectionDomain',
  tableName: 'collection_domains',
  properties: {
    collection: () => p.manyToOne(Collection).deleteRule('cascade').primary(),
    domainKey: p.string().length(100).primary(),
    tenant: () => p.manyToOne(Tenant).deleteRule('cascade').index(),
    createdAt: p.datetime().onCreate(() => new Date()),
  },
});
