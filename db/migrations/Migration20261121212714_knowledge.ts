import { Migration } from '@mikro-orm/migrations';

export class Migration20261121212714_knowledge extends Migration {

  override name = 'Migration20261121212714_knowledge';

  override up(): void | Promise<void> {
    // Full-text search with accents folded, and trigram similarity for fuzzy matches.
    this.addSql(`create extension if not exists pg_trgm;`);
    this.addSql(`create extension if not exists unaccent;`);
    this.addSql(`create table "documents" ("id" uuid not null default gen_random_uuid(), "tenant_id" uuid not null, "name" varchar(300) not null, "category" varchar(100) not null default 'document', "mime_type" varchar(200) not null, "size_bytes" int not null, "content_hash" varchar(64) not null, "status" text not null default 'processing', "characters" int not null default 0, "pages" int null, "chunk_count" int not null default 0, "embedding_model" varchar(200) null, "uploaded_by" varchar(320) not null, "uploaded_at" timestamptz not null, "updated_at" timestamptz not null, primary key ("id"));`);
    this.addSql(`create index "documents_tenant_id_uploaded_at_index" on "documents" ("tenant_id", "uploaded_at");`);

    this.addSql(`create table "ingestion_jobs" ("id" uuid not null default gen_random_uuid(), "tenant_id" uuid not null, "document_id" uuid null, "source_type" varchar(32) not null default 'upload', "name" varchar(300) not null, "status" text not null default 'pending', "stage" varchar(32) null, "progress" int not null default 0, "options" jsonb not null, "content" bytea null, "result" jsonb null, "error_message" text null, "created_by" varchar(320) not null, "created_at" timestamptz not null, "started_at" timestamptz null, "completed_at" timestamptz null, primary key ("id"));`);
    this.addSql(`create index "ingestion_jobs_tenant_id_created_at_index" on "ingestion_jobs" ("tenant_id", "created_at");`);

    this.addSql(`create table "document_chunks" ("id" uuid not null default gen_random_uuid(), "tenant_id" uuid not null, "document_id" uuid not null, "ordinal" int not null, "text" text not null, "characters" int not null, "locator" varchar(500) null, "search_vector" tsvector null, "embedding" bytea null, "created_at" timestamptz not null, primary key ("id"));`);
    this.addSql(`create index "document_chunks_tenant_id_index" on "document_chunks" ("tenant_id");`);
    this.addSql(`create index "document_chunks_search_vector_gin" on "document_chunks" using gin ("search_vector");`);
    this.addSql(`create index "document_chunks_text_trgm" on "document_chunks" using gin ("text" gin_trgm_ops);`);
    this.addSql(`alter table "document_chunks" add constraint "document_chunks_document_id_ordinal_unique" unique ("document_id", "ordinal");`);

    this.addSql(`create table "document_collections" ("document_id" uuid not null, "collection_id" uuid not null, "tenant_id" uuid not null, "created_at" timestamptz not null, primary key ("document_id", "collection_id"));`);
    this.addSql(`create index "document_collections_collection_id_index" on "document_collections" ("collection_id");`);
    this.addSql(`create index "document_collections_tenant_id_index" on "document_collections" ("tenant_id");`);

    this.addSql(`alter table "documents" add constraint "documents_tenant_id_foreign" foreign key ("tenant_id") references "tenants" ("id") on delete cascade;`);
    this.addSql(`alter table "documents" add constraint "documents_status_check" check ("status" in ('processing', 'ready', 'failed'));`);

    this.addSql(`alter table "ingestion_jobs" add constraint "ingestion_jobs_tenant_id_foreign" foreign key ("tenant_id") references "tenants" ("id") on delete cascade;`);
    this.addSql(`alter table "ingestion_jobs" add constraint "ingestion_jobs_document_id_foreign" foreign key ("document_id") references "documents" ("id") on delete set null;`);
    this.addSql(`alter table "ingestion_jobs" add constraint "ingestion_jobs_status_check" check ("status" in ('pending', 'running', 'completed', 'failed', 'cancelled'));`);

    this.addSql(`alter table "document_chunks" add constraint "document_chunks_tenant_id_foreign" foreign key ("tenant_id") references "tenants" ("id") on delete cascade;`);
    this.addSql(`alter table "document_chunks" add constraint "document_chunks_document_id_foreign" foreign key ("document_id") references "documents" ("id") on delete cascade;`);

    this.addSql(`alter table "document_collections" add constraint "document_collections_document_id_foreign" foreign key ("document_id") references "documents" ("id") on update cascade on delete cascade;`);
    this.addSql(`alter table "document_collections" add constraint "document_collections_collection_id_foreign" foreign key ("collection_id") references "collections" ("id") on update cascade on delete cascade;`);
    this.addSql(`alter table "document_collections" add constraint "document_collections_tenant_id_foreign" foreign key ("tenant_id") references "tenants" ("id") on delete cascade;`);
  }

  override down(): void | Promise<void> {
    this.addSql(`alter table "ingestion_jobs" drop constraint "ingestion_jobs_document_id_foreign";`);
    this.addSql(`alter table "document_chunks" drop constraint "document_chunks_document_id_foreign";`);
    this.addSql(`alter table "document_collections" drop constraint "document_collections_document_id_foreign";`);

    this.addSql(`drop table if exists "documents" cascade;`);
    this.addSql(`drop table if exists "ingestion_jobs" cascade;`);
    this.addSql(`drop table if exists "document_chunks" cascade;`);
    this.addSql(`drop table if exists "document_collections" cascade;`);
  }

}
