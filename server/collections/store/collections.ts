// The collections and collection_domains tables; this module alone writes them (collections.domain_keys
// is derived: a trigger on collection_domains keeps it).
import { LockMode } from '@mikro-orm/core';
import { sql } from 'kysely';
import { Collection, CollectionDomain, type ICollection } from '../../../db/entities/collection.js';
import { kyselyOf } from '../../../db/kysely.js';
import type { EntityManager } from '../../../db/orm.js';
import type { SqlPool } from '../../../db/sql-pool.js';
import { build, statement } from '../../../db/statements.js';
import { isUniqueViolation } from '../../../db/unique-violation.js';
import type { CollectionDto } from '../collections.schemas.js';

/** A collection as COLLECTION_COLUMNS read it. */
export interface CollectionRow {
  id: string;
  slug: string;
  label: string;
  color: string | null;
  created_at: Date;
  tags: string[];
  visibility: CollectionDto['visibility'];
  last_synced_at: Date | null;
  retrieval_config: CollectionDto['retrieval_config'];
  default_embedding_model: string | null;
  default_chunking_strategy: CollectionDto['default_chunking_strategy'];
  default_chunk_size: number | null;
  default_chunk_overlap: number | null;
  domain_keys: string[] | null;
}

// Collections with their domain keys (collections.domain_keys, which a trigger on collection_domains
// keeps sorted and current: listing is one index scan).
const COLLECTION_COLUMNS = [
  'c.id', 'c.slug', 'c.label', 'c.color', 'c.created_at', 'c.tags', 'c.visibility', 'c.last_synced_at', 'c.retrieval_config',
  'c.default_embedding_model', 'c.default_chunking_strategy', 'c.default_chunk_size', 'c.default_chunk_overlap',
  // Derived (a trigger keeps it), so the entity does not map it.
  sql<string[] | null>`${sql.ref('c.domain_keys')}`.as('domain_keys'),
] as const;

// GET /v1/collections is a benchmarked hot path (test/bench runs this text as it is).
const LIST = statement<{ tenantId: string }>()('collections_list', (p) =>
  build.selectFrom('collections as c').select(COLLECTION_COLUMNS).where('c.tenant_id', '=', p.tenantId).orderBy('c.created_at').orderBy('c.id'),
).as<CollectionRow>();

/** The list's statement text (`$1` the tenant id), for the benchmarks that run it on a bare pool. */
export const LIST_COLLECTIONS_SQL = LIST.text;

/**
 * The tenant's collections, oldest first, for GET /v1/collections: outside any transaction, so on
 * the plain pool as a named prepared statement (planned once per connection, not per request).
 */
export async function listCollectionRows(sql: SqlPool, tenantId: string): Promise<CollectionRow[]> {
  return LIST.run(sql, { tenantId });
}

/** The tenant's collections, oldest first, read through `em` (inside its transaction, if any). */
export async function selectCollectionRows(em: EntityManager, tenantId: string): Promise<CollectionRow[]> {
  const rows = await kyselyOf(em).selectFrom('collections as c').select(COLLECTION_COLUMNS).where('c.tenant_id', '=', tenantId).orderBy('c.created_at').orderBy('c.id').execute();
  return rows as unknown as CollectionRow[];
}

/** One collection of the tenant (undefined when there is none). */
export async function selectCollectionRow(em: EntityManager, tenantId: string, id: string): Promise<CollectionRow | undefined> {
  const row = await kyselyOf(em).selectFrom('collections as c').select(COLLECTION_COLUMNS).where('c.id', '=', id).where('c.tenant_id', '=', tenantId).executeTakeFirst();
  return row as unknown as CollectionRow | undefined;
}

/** The collection entity, locked `for update` until the end of `tx`'s transaction (null when there is none). */
export async function findCollectionForUpdate(tx: EntityManager, tenantId: string, id: string): Promise<ICollection | null> {
  return tx.findOne(Collection, { id, tenant: tenantId }, { lockMode: LockMode.PESSIMISTIC_WRITE });
}

/** The collection's id, slug and visibility, locked `for update` until the end of `tx`'s transaction. */
export async function lockCollectionRow(tx: EntityManager, tenantId: string, id: string): Promise<{ id: string; slug: string; visibility: string } | undefined> {
  return kyselyOf(tx).selectFrom('collections').select(['id', 'slug', 'visibility']).where('id', '=', id).where('tenant_id', '=', tenantId).forUpdate().executeTakeFirst();
}

/** The ingestion defaults of those of `ids` (valid UUIDs, not empty) that are collections of the tenant. */
export async function selectCollectionDefaults(em: EntityManager, tenantId: string, ids: string[]) {
  return kyselyOf(em)
    .selectFrom('collections')
    .select(['id', 'default_chunking_strategy', 'default_chunk_size', 'default_chunk_overlap', 'default_embedding_model'])
    .where('tenant_id', '=', tenantId)
    .where('id', 'in', ids)
    .execute();
}

export interface NewCollection {
  id: string;
  tenantId: string;
  slug: string;
  label: string;
  color: string;
  defaultEmbeddingModel: string | null;
  defaultChunkingStrategy: string | null;
  defaultChunkSize: number | null;
  defaultChunkOverlap: number | null;
}

/** Inserts the collection (no tags, workspace visibility, no retrieval_config); `taken` when its slug exists already. */
export async function insertCollection(tx: EntityManager, values: NewCollection): Promise<{ taken: boolean }> {
  tx.create(Collection, {
    id: values.id,
    tenant: values.tenantId,
    slug: values.slug,
    label: values.label,
    color: values.color,
    tags: [],
    visibility: 'workspace',
    retrievalConfig: null,
    defaultEmbeddingModel: values.defaultEmbeddingModel,
    defaultChunkingStrategy: values.defaultChunkingStrategy,
    defaultChunkSize: values.defaultChunkSize,
    defaultChunkOverlap: values.defaultChunkOverlap,
    lastSyncedAt: null,
  });
  return flushCollectionInsert(tx);
}

/** Adds the new collection's domain attachments to the unit of work (`flushCollectionInsert` writes them). */
export function addCollectionDomains(tx: EntityManager, tenantId: string, collectionId: string, domainKeys: string[]): void {
  for (const domainKey of domainKeys) tx.create(CollectionDomain, { collection: collectionId, domainKey, tenant: tenantId });
}

/** Flushes a collection being created; `taken` on a unique violation (its slug exists already). */
export async function flushCollectionInsert(tx: EntityManager): Promise<{ taken: boolean }> {
  try {
    await tx.flush();
    return { taken: false };
  } catch (err) {
    if (isUniqueViolation(err)) return { taken: true };
    throw err;
  }
}

/** Writes the changes made to loaded collections (and whatever else the unit of work holds, such as an audit entry). */
export async function saveCollectionChanges(tx: EntityManager): Promise<void> {
  await tx.flush();
}

/** Deletes the collection (its domain attachments and document references go by cascade); undefined when there is none. */
export async function deleteCollectionRow(tx: EntityManager, tenantId: string, id: string): Promise<{ id: string; slug: string } | undefined> {
  return kyselyOf(tx).deleteFrom('collections').where('id', '=', id).where('tenant_id', '=', tenantId).returning(['id', 'slug']).executeTakeFirst();
}

/** Attaches a domain; false when it was attached already. */
export async function insertCollectionDomain(tx: EntityManager, tenantId: string, collectionId: string, domainKey: string): Promise<boolean> {
  const inserted = await kyselyOf(tx)
    .insertInto('collection_domains')
    .values({ collection_id: collectionId, domain_key: domainKey, tenant_id: tenantId, created_at: sql<Date>`now()` })
    .onConflict((oc) => oc.doNothing())
    .returning('domain_key')
    .execute();
  return inserted.length > 0;
}

/** The domain keys attached to the collection. */
export async function selectCollectionDomainKeys(tx: EntityManager, collectionId: string): Promise<string[]> {
  const rows = await kyselyOf(tx).selectFrom('collection_domains').select('domain_key').where('collection_id', '=', collectionId).execute();
  return rows.map((r) => r.domain_key);
}

/** Detaches a domain from the collection. */
export async function deleteCollectionDomain(tx: EntityManager, collectionId: string, domainKey: string): Promise<void> {
  await kyselyOf(tx).deleteFrom('collection_domains').where('collection_id', '=', collectionId).where('domain_key', '=', domainKey).execute();
}
