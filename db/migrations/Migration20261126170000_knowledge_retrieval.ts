import { Migration } from '@mikro-orm/migrations';

// Knowledge retrieval reads which embedding model the ready documents in scope use on every query
// (server/knowledge/store/retrieval.ts, selectScopeEmbeddingModel): a tenant with no embedded
// document is answered from this index without reading its documents.
export class Migration20261126170000_knowledge_retrieval extends Migration {

  override name = 'Migration20261126170000_knowledge_retrieval';

  override up(): void | Promise<void> {
    this.addSql(`create index if not exists "documents_tenant_id_embedding_model_ready_index" on "documents" ("tenant_id", "embedding_model") where "status" = 'ready' and "embedding_model" is not null;`);
  }

  override down(): void | Promise<void> {
    this.addSql(`drop index if exists "documents_tenant_id_embedding_model_ready_index";`);
  }

}
