import type { EntityManager } from '../../db/orm.js';
import { iso, isoRequired } from '../common/schemas.js';
import type { CollectionDto } from './collections.schemas.js';

interface CollectionRow {
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

export function toCollectionDto(row: CollectionRow): CollectionDto {
  return {
    id: row.id,
    slug: row.slug,
    label: row.label,
    color: row.color,
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

// Collections with their domain keys aggregated in the same statement.
export const COLLECTION_SELECT = `
  select c.id, c.slug, c.label, c.color, c.created_at, c.tags, c.visibility, c.last_synced_at, c.retrieval_config,
         c.default_embedding_model, c.default_chunking_strategy, c.default_chunk_size, c.default_chunk_overlap,
         (select coalesce(json_agg(d.domain_key order by d.domain_key), '[]'::json) from collection_domains d where d.collection_id = c.id) as domain_keys
    from collections c`;

export async function listCollections(em: EntityManager, tenantId: string) {
  const rows = await em.execute<CollectionRow[]>(`${COLLECTION_SELECT} where c.tenant_id = ? order by c.created_at, c.id`, [tenantId]);
  return { collections: rows.map(toCollectionDto) };
}
