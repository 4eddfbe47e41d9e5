import { Migration } from '@mikro-orm/migrations';

export class Migration20261121210056_initial extends Migration {

  override name = 'Migration20261121210056_initial';

  override up(): void | Promise<void> {
    this.addSql(`create table "login_attempts" ("id" uuid not null default gen_random_uuid(), "email" varchar(320) not null, "succeeded" boolean not null, "ip" varchar(64) null, "created_at" timestamptz not null, primary key ("id"));`);
    this.addSql(`create index "login_attempts_email_created_at_index" on "login_attempts" ("email", "created_at");`);

    this.addSql(`create table "outbox_messages" ("id" uuid not null default gen_random_uuid(), "to_address" varchar(320) not null, "subject" varchar(300) not null, "body" text not null, "kind" varchar(64) not null, "created_at" timestamptz not null, "sent_at" timestamptz null, "last_error" text null, primary key ("id"));`);
    this.addSql(`create index "outbox_messages_to_address_index" on "outbox_messages" ("to_address");`);

    this.addSql(`create table "platform_settings" ("key" varchar(100) not null, "value" text not null, "created_at" timestamptz not null, primary key ("key"));`);

    this.addSql(`create table "tenants" ("id" uuid not null default gen_random_uuid(), "name" varchar(200) not null, "type" text not null default 'trial', "plan" text not null default 'trial', "billing_email" varchar(320) null, "is_active" boolean not null default true, "enabled_domains" jsonb not null default '["hiring"]', "monthly_request_quota" int null, "monthly_token_quota" bigint null, "default_model" varchar(200) null, "disabled_intents" jsonb not null default '[]', "guardrails_config" jsonb null, "created_at" timestamptz not null, "updated_at" timestamptz not null, primary key ("id"));`);

    this.addSql(`create table "sessions" ("id" uuid not null default gen_random_uuid(), "tenant_id" uuid not null, "user_id" varchar(200) not null, "domain" varchar(100) not null, "intent" varchar(100) null, "status" text not null default 'active', "message_count" int not null default 0, "tokens_used" int not null default 0, "cost_usd" numeric(14,6) not null default '0', "last_activity_at" timestamptz not null, "created_at" timestamptz not null, primary key ("id"));`);
    this.addSql(`create index "sessions_tenant_id_last_activity_at_index" on "sessions" ("tenant_id", "last_activity_at");`);
    this.addSql(`create index "sessions_status_last_activity_at_index" on "sessions" ("status", "last_activity_at");`);

    this.addSql(`create table "session_messages" ("id" uuid not null default gen_random_uuid(), "tenant_id" uuid not null, "session_id" uuid not null, "role" text not null, "intent" varchar(100) null, "content" jsonb not null, "model" varchar(200) null, "tokens" int not null default 0, "cost_usd" numeric(14,6) not null default '0', "latency_ms" int not null default 0, "cached" boolean not null default false, "created_at" timestamptz not null, primary key ("id"));`);
    this.addSql(`create index "session_messages_tenant_id_index" on "session_messages" ("tenant_id");`);
    this.addSql(`create index "session_messages_session_id_created_at_index" on "session_messages" ("session_id", "created_at");`);

    this.addSql(`create table "prompts" ("id" uuid not null default gen_random_uuid(), "tenant_id" uuid not null, "prompt_key" varchar(100) not null, "name" varchar(200) not null, "description" text null, "latest_version" int not null default 0, "created_at" timestamptz not null, "updated_at" timestamptz not null, primary key ("id"));`);
    this.addSql(`alter table "prompts" add constraint "prompts_tenant_id_prompt_key_unique" unique ("tenant_id", "prompt_key");`);

    this.addSql(`create table "prompt_versions" ("id" uuid not null default gen_random_uuid(), "tenant_id" uuid not null, "prompt_id" uuid not null, "version_number" int not null, "template" text not null, "note" text null, "created_by" varchar(64) null, "created_at" timestamptz not null, primary key ("id"));`);
    this.addSql(`create index "prompt_versions_tenant_id_index" on "prompt_versions" ("tenant_id");`);
    this.addSql(`alter table "prompt_versions" add constraint "prompt_versions_prompt_id_version_number_unique" unique ("prompt_id", "version_number");`);

    this.addSql(`create table "intent_cache" ("cache_key" varchar(64) not null, "tenant_id" uuid not null, "output" jsonb not null, "model" varchar(200) not null, "expires_at" timestamptz not null, "created_at" timestamptz not null, primary key ("cache_key"));`);
    this.addSql(`create index "intent_cache_tenant_id_index" on "intent_cache" ("tenant_id");`);
    this.addSql(`create index "intent_cache_expires_at_index" on "intent_cache" ("expires_at");`);

    this.addSql(`create table "environments" ("id" uuid not null default gen_random_uuid(), "tenant_id" uuid not null, "name" varchar(64) not null, "created_at" timestamptz not null, primary key ("id"));`);
    this.addSql(`alter table "environments" add constraint "environments_tenant_id_name_unique" unique ("tenant_id", "name");`);

    this.addSql(`create table "custom_domains" ("id" uuid not null default gen_random_uuid(), "tenant_id" uuid not null, "domain_key" varchar(100) not null, "display_name" varchar(200) not null, "description" text null, "is_active" boolean not null default true, "sort_order" int not null default 0, "created_at" timestamptz not null, "updated_at" timestamptz not null, primary key ("id"));`);
    this.addSql(`alter table "custom_domains" add constraint "custom_domains_tenant_id_domain_key_unique" unique ("tenant_id", "domain_key");`);

    this.addSql(`create table "custom_intents" ("id" uuid not null default gen_random_uuid(), "tenant_id" uuid not null, "domain_id" uuid not null, "domain_key" varchar(100) not null, "intent_key" varchar(100) not null, "display_name" varchar(200) not null, "description" text null, "prompt_template" text not null, "prompt_binding" jsonb null, "output_schema" jsonb null, "input_schema" jsonb null, "guardrails_config" jsonb null, "agent_config" jsonb null, "execution_config" jsonb null, "retrieval_config" jsonb null, "cache_config" jsonb null, "sort_order" int not null default 0, "is_active" boolean not null default true, "current_version" int not null default 0, "created_at" timestamptz not null, "updated_at" timestamptz not null, primary key ("id"));`);
    this.addSql(`create index "custom_intents_domain_id_index" on "custom_intents" ("domain_id");`);
    this.addSql(`alter table "custom_intents" add constraint "custom_intents_tenant_id_domain_key_intent_key_unique" unique ("tenant_id", "domain_key", "intent_key");`);

    this.addSql(`create table "intent_versions" ("id" uuid not null default gen_random_uuid(), "tenant_id" uuid not null, "intent_id" uuid not null, "version_number" int not null, "definition" jsonb not null, "changed_fields" jsonb not null, "change_type" text not null, "restored_from_version" int null, "created_by" varchar(64) null, "actor_name" varchar(320) null, "created_at" timestamptz not null, primary key ("id"));`);
    this.addSql(`create index "intent_versions_tenant_id_created_at_index" on "intent_versions" ("tenant_id", "created_at");`);
    this.addSql(`alter table "intent_versions" add constraint "intent_versions_intent_id_version_number_unique" unique ("intent_id", "version_number");`);

    this.addSql(`create table "collections" ("id" uuid not null default gen_random_uuid(), "tenant_id" uuid not null, "slug" varchar(100) not null, "label" varchar(200) not null, "color" varchar(16) null, "tags" jsonb not null default '[]', "visibility" text not null default 'workspace', "retrieval_config" jsonb null, "default_embedding_model" varchar(200) null, "default_chunking_strategy" varchar(32) null, "default_chunk_size" int null, "default_chunk_overlap" int null, "last_synced_at" timestamptz null, "created_at" timestamptz not null, "updated_at" timestamptz not null, primary key ("id"));`);
    this.addSql(`alter table "collections" add constraint "collections_tenant_id_slug_unique" unique ("tenant_id", "slug");`);

    this.addSql(`create table "collection_domains" ("collection_id" uuid not null, "domain_key" varchar(100) not null, "tenant_id" uuid not null, "created_at" timestamptz not null, primary key ("collection_id", "domain_key"));`);
    this.addSql(`create index "collection_domains_tenant_id_index" on "collection_domains" ("tenant_id");`);

    this.addSql(`create table "audit_log" ("id" uuid not null default gen_random_uuid(), "tenant_id" uuid not null, "actor_type" varchar(32) not null, "actor_id" varchar(64) null, "actor_name" varchar(320) not null, "action" varchar(100) not null, "target_type" varchar(64) not null, "target_id" varchar(200) null, "details" jsonb null, "created_at" timestamptz not null, primary key ("id"));`);
    this.addSql(`create index "audit_log_tenant_id_created_at_index" on "audit_log" ("tenant_id", "created_at");`);

    this.addSql(`create table "api_keys" ("id" uuid not null default gen_random_uuid(), "tenant_id" uuid not null, "environment_id" uuid null, "key_hash" varchar(64) not null, "key_preview" varchar(32) not null, "created_at" timestamptz not null, "revoked_at" timestamptz null, "last_used_at" timestamptz null, primary key ("id"));`);
    this.addSql(`create index "api_keys_tenant_id_index" on "api_keys" ("tenant_id");`);
    this.addSql(`create index "api_keys_environment_id_index" on "api_keys" ("environment_id");`);
    this.addSql(`alter table "api_keys" add constraint "api_keys_key_hash_unique" unique ("key_hash");`);

    this.addSql(`create table "tenant_provider_keys" ("id" uuid not null default gen_random_uuid(), "tenant_id" uuid not null, "provider" varchar(64) not null, "encrypted_key" text not null, "key_preview" varchar(32) not null, "created_at" timestamptz not null, "updated_at" timestamptz not null, primary key ("id"));`);
    this.addSql(`alter table "tenant_provider_keys" add constraint "tenant_provider_keys_tenant_id_provider_unique" unique ("tenant_id", "provider");`);

    this.addSql(`create table "usage_counters" ("tenant_id" uuid not null, "month" varchar(7) not null, "requests" bigint not null default '0', "tokens" bigint not null default '0', "cost_usd" numeric(16,6) not null default '0', primary key ("tenant_id", "month"));`);

    this.addSql(`create table "usage_events" ("id" uuid not null default gen_random_uuid(), "tenant_id" uuid not null, "environment_id" uuid null, "kind" varchar(64) not null, "domain" varchar(100) null, "intent" varchar(100) null, "model" varchar(200) null, "prompt_tokens" int not null default 0, "completion_tokens" int not null default 0, "total_tokens" int not null default 0, "cost_usd" numeric(14,6) not null default '0', "latency_ms" int not null default 0, "status" varchar(32) not null default 'ok', "counts_as_request" boolean not null default true, "created_at" timestamptz not null, primary key ("id"));`);
    this.addSql(`create index "usage_events_tenant_id_created_at_index" on "usage_events" ("tenant_id", "created_at");`);

    this.addSql(`create table "users" ("id" uuid not null default gen_random_uuid(), "tenant_id" uuid not null, "email" varchar(320) not null, "full_name" varchar(200) null, "password_hash" varchar(255) not null, "role" text not null, "email_verified" boolean not null default false, "password_changed_at" timestamptz null, "created_at" timestamptz not null, "updated_at" timestamptz not null, primary key ("id"));`);
    this.addSql(`create index "users_tenant_id_index" on "users" ("tenant_id");`);
    this.addSql(`alter table "users" add constraint "users_email_unique" unique ("email");`);

    this.addSql(`create table "email_tokens" ("id" uuid not null default gen_random_uuid(), "user_id" uuid not null, "kind" text not null, "token_hash" varchar(64) not null, "expires_at" timestamptz not null, "used_at" timestamptz null, "created_at" timestamptz not null, primary key ("id"));`);
    this.addSql(`create index "email_tokens_user_id_index" on "email_tokens" ("user_id");`);
    this.addSql(`alter table "email_tokens" add constraint "email_tokens_token_hash_unique" unique ("token_hash");`);
    this.addSql(`create index "email_tokens_expires_at_index" on "email_tokens" ("expires_at");`);

    this.addSql(`create table "worker_heartbeats" ("worker_id" varchar(128) not null, "started_at" timestamptz not null, "last_seen_at" timestamptz not null, primary key ("worker_id"));`);
    this.addSql(`create index "worker_heartbeats_last_seen_at_index" on "worker_heartbeats" ("last_seen_at");`);

    this.addSql(`alter table "tenants" add constraint "tenants_type_check" check ("type" in ('internal', 'partner', 'enterprise', 'trial'));`);
    this.addSql(`alter table "tenants" add constraint "tenants_plan_check" check ("plan" in ('free', 'trial', 'starter', 'pro', 'enterprise'));`);

    this.addSql(`alter table "sessions" add constraint "sessions_tenant_id_foreign" foreign key ("tenant_id") references "tenants" ("id") on delete cascade;`);
    this.addSql(`alter table "sessions" add constraint "sessions_status_check" check ("status" in ('active', 'completed', 'expired', 'error'));`);

    this.addSql(`alter table "session_messages" add constraint "session_messages_tenant_id_foreign" foreign key ("tenant_id") references "tenants" ("id") on delete cascade;`);
    this.addSql(`alter table "session_messages" add constraint "session_messages_session_id_foreign" foreign key ("session_id") references "sessions" ("id") on delete cascade;`);
    this.addSql(`alter table "session_messages" add constraint "session_messages_role_check" check ("role" in ('user', 'assistant'));`);

    this.addSql(`alter table "prompts" add constraint "prompts_tenant_id_foreign" foreign key ("tenant_id") references "tenants" ("id") on delete cascade;`);

    this.addSql(`alter table "prompt_versions" add constraint "prompt_versions_tenant_id_foreign" foreign key ("tenant_id") references "tenants" ("id") on delete cascade;`);
    this.addSql(`alter table "prompt_versions" add constraint "prompt_versions_prompt_id_foreign" foreign key ("prompt_id") references "prompts" ("id") on delete cascade;`);

    this.addSql(`alter table "intent_cache" add constraint "intent_cache_tenant_id_foreign" foreign key ("tenant_id") references "tenants" ("id") on delete cascade;`);

    this.addSql(`alter table "environments" add constraint "environments_tenant_id_foreign" foreign key ("tenant_id") references "tenants" ("id") on delete cascade;`);

    this.addSql(`alter table "custom_domains" add constraint "custom_domains_tenant_id_foreign" foreign key ("tenant_id") references "tenants" ("id") on delete cascade;`);

    this.addSql(`alter table "custom_intents" add constraint "custom_intents_tenant_id_foreign" foreign key ("tenant_id") references "tenants" ("id") on delete cascade;`);
    this.addSql(`alter table "custom_intents" add constraint "custom_intents_domain_id_foreign" foreign key ("domain_id") references "custom_domains" ("id") on delete cascade;`);

    this.addSql(`alter table "intent_versions" add constraint "intent_versions_tenant_id_foreign" foreign key ("tenant_id") references "tenants" ("id") on delete cascade;`);
    this.addSql(`alter table "intent_versions" add constraint "intent_versions_intent_id_foreign" foreign key ("intent_id") references "custom_intents" ("id") on delete cascade;`);
    this.addSql(`alter table "intent_versions" add constraint "intent_versions_change_type_check" check ("change_type" in ('create', 'update', 'restore'));`);

    this.addSql(`alter table "collections" add constraint "collections_tenant_id_foreign" foreign key ("tenant_id") references "tenants" ("id") on delete cascade;`);
    this.addSql(`alter table "collections" add constraint "collections_visibility_check" check ("visibility" in ('workspace', 'restricted'));`);

    this.addSql(`alter table "collection_domains" add constraint "collection_domains_collection_id_foreign" foreign key ("collection_id") references "collections" ("id") on delete cascade;`);
    this.addSql(`alter table "collection_domains" add constraint "collection_domains_tenant_id_foreign" foreign key ("tenant_id") references "tenants" ("id") on delete cascade;`);

    this.addSql(`alter table "audit_log" add constraint "audit_log_tenant_id_foreign" foreign key ("tenant_id") references "tenants" ("id") on delete cascade;`);

    this.addSql(`alter table "api_keys" add constraint "api_keys_tenant_id_foreign" foreign key ("tenant_id") references "tenants" ("id") on delete cascade;`);
    this.addSql(`alter table "api_keys" add constraint "api_keys_environment_id_foreign" foreign key ("environment_id") references "environments" ("id") on delete cascade;`);

    this.addSql(`alter table "tenant_provider_keys" add constraint "tenant_provider_keys_tenant_id_foreign" foreign key ("tenant_id") references "tenants" ("id") on delete cascade;`);

    this.addSql(`alter table "usage_counters" add constraint "usage_counters_tenant_id_foreign" foreign key ("tenant_id") references "tenants" ("id") on delete cascade;`);

    this.addSql(`alter table "usage_events" add constraint "usage_events_tenant_id_foreign" foreign key ("tenant_id") references "tenants" ("id") on delete cascade;`);

    this.addSql(`alter table "users" add constraint "users_tenant_id_foreign" foreign key ("tenant_id") references "tenants" ("id") on delete cascade;`);
    this.addSql(`alter table "users" add constraint "users_role_check" check ("role" in ('owner', 'admin', 'developer', 'viewer'));`);

    this.addSql(`alter table "email_tokens" add constraint "email_tokens_user_id_foreign" foreign key ("user_id") references "users" ("id") on delete cascade;`);
    this.addSql(`alter table "email_tokens" add constraint "email_tokens_kind_check" check ("kind" in ('verify_email', 'password_reset'));`);
  }

  override down(): void | Promise<void> {
    this.addSql(`alter table "sessions" drop constraint "sessions_tenant_id_foreign";`);
    this.addSql(`alter table "session_messages" drop constraint "session_messages_tenant_id_foreign";`);
    this.addSql(`alter table "prompts" drop constraint "prompts_tenant_id_foreign";`);
    this.addSql(`alter table "prompt_versions" drop constraint "prompt_versions_tenant_id_foreign";`);
    this.addSql(`alter table "intent_cache" drop constraint "intent_cache_tenant_id_foreign";`);
    this.addSql(`alter table "environments" drop constraint "environments_tenant_id_foreign";`);
    this.addSql(`alter table "custom_domains" drop constraint "custom_domains_tenant_id_foreign";`);
    this.addSql(`alter table "custom_intents" drop constraint "custom_intents_tenant_id_foreign";`);
    this.addSql(`alter table "intent_versions" drop constraint "intent_versions_tenant_id_foreign";`);
    this.addSql(`alter table "collections" drop constraint "collections_tenant_id_foreign";`);
    this.addSql(`alter table "collection_domains" drop constraint "collection_domains_tenant_id_foreign";`);
    this.addSql(`alter table "audit_log" drop constraint "audit_log_tenant_id_foreign";`);
    this.addSql(`alter table "api_keys" drop constraint "api_keys_tenant_id_foreign";`);
    this.addSql(`alter table "tenant_provider_keys" drop constraint "tenant_provider_keys_tenant_id_foreign";`);
    this.addSql(`alter table "usage_counters" drop constraint "usage_counters_tenant_id_foreign";`);
    this.addSql(`alter table "usage_events" drop constraint "usage_events_tenant_id_foreign";`);
    this.addSql(`alter table "users" drop constraint "users_tenant_id_foreign";`);
    this.addSql(`alter table "session_messages" drop constraint "session_messages_session_id_foreign";`);
    this.addSql(`alter table "prompt_versions" drop constraint "prompt_versions_prompt_id_foreign";`);
    this.addSql(`alter table "api_keys" drop constraint "api_keys_environment_id_foreign";`);
    this.addSql(`alter table "custom_intents" drop constraint "custom_intents_domain_id_foreign";`);
    this.addSql(`alter table "intent_versions" drop constraint "intent_versions_intent_id_foreign";`);
    this.addSql(`alter table "collection_domains" drop constraint "collection_domains_collection_id_foreign";`);
    this.addSql(`alter table "email_tokens" drop constraint "email_tokens_user_id_foreign";`);

    this.addSql(`drop table if exists "login_attempts" cascade;`);
    this.addSql(`drop table if exists "outbox_messages" cascade;`);
    this.addSql(`drop table if exists "platform_settings" cascade;`);
    this.addSql(`drop table if exists "tenants" cascade;`);
    this.addSql(`drop table if exists "sessions" cascade;`);
    this.addSql(`drop table if exists "session_messages" cascade;`);
    this.addSql(`drop table if exists "prompts" cascade;`);
    this.addSql(`drop table if exists "prompt_versions" cascade;`);
    this.addSql(`drop table if exists "intent_cache" cascade;`);
    this.addSql(`drop table if exists "environments" cascade;`);
    this.addSql(`drop table if exists "custom_domains" cascade;`);
    this.addSql(`drop table if exists "custom_intents" cascade;`);
    this.addSql(`drop table if exists "intent_versions" cascade;`);
    this.addSql(`drop table if exists "collections" cascade;`);
    this.addSql(`drop table if exists "collection_domains" cascade;`);
    this.addSql(`drop table if exists "audit_log" cascade;`);
    this.addSql(`drop table if exists "api_keys" cascade;`);
    this.addSql(`drop table if exists "tenant_provider_keys" cascade;`);
    this.addSql(`drop table if exists "usage_counters" cascade;`);
    this.addSql(`drop table if exists "usage_events" cascade;`);
    this.addSql(`drop table if exists "users" cascade;`);
    this.addSql(`drop table if exists "email_tokens" cascade;`);
    this.addSql(`drop table if exists "worker_heartbeats" cascade;`);
  }

}
