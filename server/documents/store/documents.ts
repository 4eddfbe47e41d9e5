// The documents and document_collections tables; this module writes them, except for an upload's
// intake (document-uploads.ts) and an ingestion's completion (ingestion-completion.ts), each one
// statement.
import { sql } from 'kysely';
import { kyselyOf } from '../../../db/kysely.js';
import type { EntityManager } from '../../../db/orm.js';

/** A document as DOCUMENT_SELECT reads it, with the collections referencing it. */
export interface DocumentRow {
  id: string;
  name: string;
  category: string;
  chunk_count: number;
  size_bytes: number;
  embedding_model: string | null;
  uploaded_by: string;
  uploaded_at: Date;
  status: 'processing' | 'ready' | 'failed';
  collections: { id: string; slug: string; label: string; color: string | null }[] | null;
}

// Raw: the referencing collections are built with json_agg(json_build_object(...)) in a
// correlated subquery.
const DOCUMENT_SELECT = `
  select d.id, d.name, d.category, d.chunk_count, d.size_bytes, d.embedding_model, d.uploaded_by, d.uploaded_at, d.status,
         (select coalesce(json_agg(json_build_object('id', c.id, 'slug', c.slug, 'label', c.label, 'color', c.color) order by c.slug, c.id), '[]'::json)
            from document_collections dc join collections c on c.id = dc.collection_id
           where dc.document_id = d.id) as collections
    from documents d`;

export interface DocumentFilter {
  /** A valid UUID. */
  collectionId?: string;
  category?: string;
}

/** How many of the tenant's documents match the filter. */
export async function countDocuments(em: EntityManager, tenantId: string, filter: DocumentFilter): Promise<number> {
  const { collectionId, category } = filter;
  const row = await kyselyOf(em)
    .selectFrom('documents as d')
    .select(sql<number>`count(*)::int`.as('total'))
    .where('d.tenant_id', '=', tenantId)
    .$if(collectionId !== undefined, (qb) =>
      qb.where((eb) =>
        eb.exists(eb.selectFrom('document_collections as f').select(sql`1`.as('one')).whereRef('f.document_id', '=', 'd.id').where('f.collection_id', '=', collectionId!)),
      ),
    )
    .$if(category !== undefined, (qb) => qb.where('d.category', '=', category!))
    .executeTakeFirstOrThrow();
  return row.total;
}

/** A page of the tenant's documents matching the filter, newest first. */
export async function selectDocumentRows(em: EntityManager, tenantId: string, filter: DocumentFilter, page: { limit: number; offset: number }): Promise<DocumentRow[]> {
  const where = ['d.tenant_id = ?'];
  const params: unknown[] = [tenantId];
  if (filter.collectionId !== undefined) {
    where.push('exists (select 1 from document_collections f where f.document_id = d.id and f.collection_id = ?)');
    params.push(filter.collectionId);
  }
  if (filter.category !== undefined) {
    where.push('d.category = ?');
    params.push(filter.category);
  }
  // Raw: DOCUMENT_SELECT (json building).
  return em.execute<DocumentRow[]>(`${DOCUMENT_SELECT} where ${where.join(' and ')} order by d.uploaded_at desc, d.id desc limit ? offset ?`, [...params, page.limit, page.offset]);
}

/** One document of the tenant (undefined when there is none). */
export async function selectDocumentRow(em: EntityManager, tenantId: string, id: string): Promise<DocumentRow | undefined> {
  // Raw: DOCUMENT_SELECT (json building).
  const [row] = await em.execute<DocumentRow[]>(`${DOCUMENT_SELECT} where d.id = ? and d.tenant_id = ?`, [id, tenantId]);
  return row;
}

/** The document's id and name (undefined when the tenant has no such document). */
export async function selectDocumentName(tx: EntityManager, tenantId: string, id: string): Promise<{ id: string; name: string } | undefined> {
  return kyselyOf(tx).selectFrom('documents').select(['id', 'name']).where('id', '=', id).where('tenant_id', '=', tenantId).executeTakeFirst();
}

/** The document's id and name, locked `for update` until the end of `tx`'s transaction. */
export async function lockDocument(tx: EntityManager, tenantId: string, id: string): Promise<{ id: string; name: string } | undefined> {
  return kyselyOf(tx).selectFrom('documents').select(['id', 'name']).where('id', '=', id).where('tenant_id', '=', tenantId).forUpdate().executeTakeFirst();
}

/** Deletes the document; its chunks, collection references and the jobs' links go by cascade. */
export async function deleteDocumentRow(tx: EntityManager, id: string): Promise<void> {
  await kyselyOf(tx).deleteFrom('documents').where('id', '=', id).execute();
}

/** Marks the document failed: no chunks. */
export async function markDocumentFailed(tx: EntityManager, id: string): Promise<void> {
  await kyselyOf(tx).updateTable('documents').set({ status: 'failed', chunk_count: 0, updated_at: sql<Date>`now()` }).where('id', '=', id).execute();
}

/** References the document from a collection; false when it was referenced already. */
export async function addDocumentCollection(tx: EntityManager, tenantId: string, documentId: string, collectionId: string): Promise<boolean> {
  const inserted = await kyselyOf(tx)
    .insertInto('document_collections')
    .values({ document_id: documentId, collection_id: collectionId, tenant_id: tenantId, created_at: sql<Date>`now()` })
    .onConflict((oc) => oc.doNothing())
    .returning('document_id')
    .execute();
  return inserted.length > 0;
}

/** Removes the collection's reference to the document; false when there was none. */
export async function deleteDocumentCollection(tx: EntityManager, documentId: string, collectionId: string): Promise<boolean> {
  const deleted = await kyselyOf(tx).deleteFrom('document_collections').where('document_id', '=', documentId).where('collection_id', '=', collectionId).returning('document_id').execute();
  return deleted.length > 0;
}

/** Writes what the unit of work holds (the audit entry of a document change). */
export async function saveDocumentChanges(em: EntityManager): Promise<void> {
  await em.flush();
}
