// The documents and document_collections tables; this module writes them, except for an upload's
// intake (document-uploads.ts) and an ingestion's completion (ingestion-completion.ts), each one
// statement.
import { sql } from 'kysely';
import { kyselyOf } from '../../../db/kysely.js';
import type { EntityManager } from '../../../db/orm.js';

/** A document as documentRows reads it, with the collections referencing it. */
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

/** Documents with the collections referencing them, as json_agg(json_build_object(...)) in a correlated subquery. */
function documentRows(em: EntityManager) {
  return kyselyOf(em)
    .selectFrom('documents as d')
    .select((eb) => [
      'd.id', 'd.name', 'd.category', 'd.chunk_count', 'd.size_bytes', 'd.embedding_model', 'd.uploaded_by', 'd.uploaded_at', 'd.status',
      eb
        .selectFrom('document_collections as dc')
        .innerJoin('collections as c', 'c.id', 'dc.collection_id')
        .select(
          sql<DocumentRow['collections']>`coalesce(json_agg(json_build_object('id', ${sql.ref('c.id')}, 'slug', ${sql.ref('c.slug')}, 'label', ${sql.ref('c.label')}, 'color', ${sql.ref('c.color')}) order by ${sql.ref('c.slug')}, ${sql.ref('c.id')}), '[]'::json)`.as('collections'),
        )
        .whereRef('dc.document_id', '=', 'd.id')
        .as('collections'),
    ]);
}

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
  const { collectionId, category } = filter;
  const rows = await documentRows(em)
    .where('d.tenant_id', '=', tenantId)
    .$if(collectionId !== undefined, (qb) =>
      qb.where((eb) =>
        eb.exists(eb.selectFrom('document_collections as f').select(sql`1`.as('one')).whereRef('f.document_id', '=', 'd.id').where('f.collection_id', '=', collectionId!)),
      ),
    )
    .$if(category !== undefined, (qb) => qb.where('d.category', '=', category!))
    .orderBy('d.uploaded_at', 'desc')
    .orderBy('d.id', 'desc')
    .limit(page.limit)
    .offset(page.offset)
    .execute();
  return rows as DocumentRow[];
}

/** One document of the tenant (undefined when there is none). */
export async function selectDocumentRow(em: EntityManager, tenantId: string, id: string): Promise<DocumentRow | undefined> {
  const row = await documentRows(em).where('d.id', '=', id).where('d.tenant_id', '=', tenantId).executeTakeFirst();
  return row as DocumentRow | undefined;
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
