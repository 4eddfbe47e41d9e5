import { randomUUID } from 'node:crypto';
import { roleAtLeast } from '../auth/roles.js';
import type { Role } from '../../db/column-values.js';
import type { EntityManager } from '../../db/orm.js';
import type { SqlPool } from '../../db/sql-pool.js';
import type { Actor } from '../actor.js';
import { recordAudit } from '../audit/audit.service.js';
import { iso, isoRequired, isUuid } from '../common/schemas.js';
import { requireUsableDomains } from '../domains/domain-access.js';
import { AppError, invalidInput, notFound } from '../errors.js';
import {
  DEFAULT_COLLECTION_COLOR, MAX_CHUNK_OVERLAP, type CollectionDto, type CreateCollectionInput, type UpdateCollectionInput,
} from './collections.schemas.js';
import {
  addCollectionDomains, deleteCollectionDomain, deleteCollectionRow, findCollectionForUpdate, flushCollectionInsert, insertCollection,
  insertCollectionDomain, saveCollectionChanges, listCollectionRows, selectCollectionDomainKeys, selectCollectionRow, type CollectionRow,
} from './store/collections.js';

// test/bench reads the list with this statement as it is.
export { LIST_COLLECTIONS_SQL } from './store/collections.js';

export function toCollectionDto(row: CollectionRow): CollectionDto {
  return {
    id: row.id,
    slug: row.slug,
    label: row.label,
    color: row.color ?? DEFAULT_COLLECTION_COLOR,
    created_at: isoRequired(row.created_at),
    domain_keys: row.domain_keys ?? [],
    tags: row.tags,
    visibility: row.visibility,
    last_synced_at: iso(row.last_synced_at),
    retrieval_config: row.retrieval_config,
    default_embedding_model: row.default_embedding_model,
    default_chunking_strategy: row.default_chunking_strategy,
    default_chunk_size: row.default_chunk_size,
    default_chunk_overlap: row.default_chunk_overlap,
  };
}

export async function listCollections(sql: SqlPool, tenantId: string) {
  const rows = await listCollectionRows(sql, tenantId);
  return { collections: rows.map(toCollectionDto) };
}

/** One collection of the tenant; missing, malformed and other tenants' ids are all 404. */
export async function getCollection(em: EntityManager, tenantId: string, id: string) {
  if (!isUuid(id)) throw notFound('Collection');
  const row = await selectCollectionRow(em, tenantId, id);
  if (!row) throw notFound('Collection');
  return { collection: toCollectionDto(row) };
}

// ------------------------------------------------------------------ rules

/** Who asks: a dashboard user's role, or none for an API key (keys are not role-scoped). */
export interface CollectionCaller {
  role?: Role;
}

/** A restricted collection is changed only by admin and owner dashboard users (API keys: always). */
export function assertMayChangeCollection(collection: { visibility: string }, caller: CollectionCaller) {
  if (caller.role === undefined || collection.visibility !== 'restricted') return;
  if (!roleAtLeast(caller.role, 'admin')) {
    throw new AppError('FORBIDDEN', 'This collection is restricted: changing it needs the admin or owner role', { required_role: 'admin', role: caller.role });
  }
}

/** Overlap must stay below the chunk size (and below 5000, which the schema checks). */
function checkChunking(size: number | null, overlap: number | null, path: 'default_chunk_overlap' | 'default_chunk_size') {
  if (size === null || overlap === null || overlap < size) return;
  const limit = Math.min(size - 1, MAX_CHUNK_OVERLAP);
  throw invalidInput('The request is invalid', [
    { path, message: `default_chunk_overlap (${overlap}) must be less than default_chunk_size (${size}): at most ${limit}`, code: 'too_big' },
  ]);
}

async function lockCollection(tx: EntityManager, tenantId: string, id: string) {
  if (!isUuid(id)) throw notFound('Collection');
  const collection = await findCollectionForUpdate(tx, tenantId, id);
  if (!collection) throw notFound('Collection');
  return collection;
}

// ------------------------------------------------------------------ writes

export async function createCollection(em: EntityManager, tenantId: string, actor: Actor, input: CreateCollectionInput) {
  checkChunking(input.default_chunk_size ?? null, input.default_chunk_overlap ?? null, 'default_chunk_overlap');
  // Every domain must be usable by the tenant (domain-access.ts): 404 unknown, 403 not enabled or inactive.
  await requireUsableDomains(em, tenantId, input.domain_keys);
  const id = randomUUID();
  const slugTaken = () => new AppError('SLUG_CONFLICT', `A collection with slug "${input.slug}" exists already`, { slug: input.slug });
  await em.transactional(async (tx) => {
    const inserted = await insertCollection(tx, {
      id,
      tenantId,
      slug: input.slug,
      label: input.label,
      color: input.color ?? DEFAULT_COLLECTION_COLOR,
      defaultEmbeddingModel: input.default_embedding_model ?? null,
      defaultChunkingStrategy: input.default_chunking_strategy ?? null,
      defaultChunkSize: input.default_chunk_size ?? null,
      defaultChunkOverlap: input.default_chunk_overlap ?? null,
    });
    if (inserted.taken) throw slugTaken();
    addCollectionDomains(tx, tenantId, id, input.domain_keys);
    recordAudit(tx, tenantId, actor, { action: 'collection.created', targetType: 'collection', targetId: id, details: { slug: input.slug, domain_keys: input.domain_keys } });
    if ((await flushCollectionInsert(tx)).taken) throw slugTaken();
  });
  return getCollection(em, tenantId, id);
}

const FIELD_TO_PROPERTY = {
  label: 'label',
  color: 'color',
  tags: 'tags',
  visibility: 'visibility',
  retrieval_config: 'retrievalConfig',
  default_embedding_model: 'defaultEmbeddingModel',
  default_chunking_strategy: 'defaultChunkingStrategy',
  default_chunk_size: 'defaultChunkSize',
  default_chunk_overlap: 'defaultChunkOverlap',
} as const satisfies Record<keyof UpdateCollectionInput, string>;

/** Applies the sent fields; `slug` and `domain_keys` are never taken from an update. */
export async function updateCollection(
  em: EntityManager,
  tenantId: string,
  actor: Actor,
  id: string,
  input: UpdateCollectionInput,
  caller: CollectionCaller,
) {
  await em.transactional(async (tx) => {
    const collection = await lockCollection(tx, tenantId, id);
    assertMayChangeCollection(collection, caller);
    const size = input.default_chunk_size !== undefined ? input.default_chunk_size : (collection.defaultChunkSize ?? null);
    const overlap = input.default_chunk_overlap !== undefined ? input.default_chunk_overlap : (collection.defaultChunkOverlap ?? null);
    checkChunking(size, overlap, input.default_chunk_overlap !== undefined ? 'default_chunk_overlap' : 'default_chunk_size');

    const fields = (Object.keys(FIELD_TO_PROPERTY) as (keyof UpdateCollectionInput)[]).filter((field) => input[field] !== undefined);
    if (!fields.length) return;
    const target = collection as unknown as Record<string, unknown>;
    for (const field of fields) target[FIELD_TO_PROPERTY[field]] = input[field];
    recordAudit(tx, tenantId, actor, { action: 'collection.updated', targetType: 'collection', targetId: collection.id, details: { slug: collection.slug, fields } });
    await saveCollectionChanges(tx);
  });
  return getCollection(em, tenantId, id);
}

/**
 * Deletes the collection; its domain attachments (and references to documents) go with it by
 * cascade. Documents themselves belong to the tenant's pool and stay.
 */
export async function deleteCollection(em: EntityManager, tenantId: string, actor: Actor, id: string) {
  if (!isUuid(id)) throw notFound('Collection');
  await em.transactional(async (tx) => {
    const deleted = await deleteCollectionRow(tx, tenantId, id);
    if (!deleted) throw notFound('Collection');
    recordAudit(tx, tenantId, actor, { action: 'collection.deleted', targetType: 'collection', targetId: deleted.id, details: { slug: deleted.slug } });
    await saveCollectionChanges(tx);
  });
}

/** Attaches a domain the tenant may use; attaching one that is attached already changes nothing. */
export async function attachDomain(em: EntityManager, tenantId: string, actor: Actor, id: string, domainKey: string, caller: CollectionCaller) {
  await em.transactional(async (tx) => {
    const collection = await lockCollection(tx, tenantId, id);
    assertMayChangeCollection(collection, caller);
    await requireUsableDomains(tx, tenantId, [domainKey]);
    if (!(await insertCollectionDomain(tx, tenantId, collection.id, domainKey))) return;
    recordAudit(tx, tenantId, actor, { action: 'collection.domain_attached', targetType: 'collection', targetId: collection.id, details: { slug: collection.slug, domain_key: domainKey } });
    await saveCollectionChanges(tx);
  });
  return getCollection(em, tenantId, id);
}

/** Detaches a domain; the last one stays, since a collection belongs to at least one domain. */
export async function detachDomain(em: EntityManager, tenantId: string, actor: Actor, id: string, domainKey: string, caller: CollectionCaller) {
  await em.transactional(async (tx) => {
    // The row lock serialises concurrent detaches, so two of them cannot remove the last two domains.
    const collection = await lockCollection(tx, tenantId, id);
    assertMayChangeCollection(collection, caller);
    const attached = await selectCollectionDomainKeys(tx, collection.id);
    if (!attached.includes(domainKey)) {
      throw new AppError('NOT_FOUND', `Domain "${domainKey}" is not attached to this collection`, { domain_key: domainKey });
    }
    if (attached.length === 1) {
      throw new AppError('CONFLICT', 'A collection needs at least one domain: attach another domain before detaching this one', { domain_key: domainKey });
    }
    await deleteCollectionDomain(tx, collection.id, domainKey);
    recordAudit(tx, tenantId, actor, { action: 'collection.domain_detached', targetType: 'collection', targetId: collection.id, details: { slug: collection.slug, domain_key: domainKey } });
    await saveCollectionChanges(tx);
  });
  return getCollection(em, tenantId, id);
}
