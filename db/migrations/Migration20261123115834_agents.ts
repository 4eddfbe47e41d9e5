import { Migration } from '@mikro-orm/migrations';

export class Migration20261123115834_agents extends Migration {

  override name = 'Migration20261123115834_agents';

  override up(): void | Promise<void> {
    this.addSql(`create table "run_steps" ("id" uuid not null default gen_random_uuid(), "tenant_id" uuid not null, "run_kind" varchar(32) not null, "run_id" uuid not null, "index" int not null, "type" varchar(32) not null, "name" varchar(200) not null, "status" varchar(32) not null, "input" jsonb null, "output" jsonb null, "prompt_tokens" int not null default 0, "completion_tokens" int not null default 0, "cost_usd" numeric(14,6) not null default '0', "latency_ms" int not null default 0, "error" text null, "started_at" timestamptz not null, "completed_at" timestamptz not null, primary key ("id"));`);
    this.addSql(`create index "run_steps_tenant_id_index" on "run_steps" ("tenant_id");`);
    this.addSql(`alter table "run_steps" add constraint "run_steps_run_id_index_unique" unique ("run_id", "index");`);

    this.addSql(`create table "agents" ("id" uuid not null default gen_random_uuid(), "tenant_id" uuid not null, "agent_key" varchar(100) not null, "name" varchar(200) not null, "description" text null, "goal" text not null, "system_instructions" text null, "model" varchar(200) null, "temperature" double precision null, "status" text not null default 'draft', "intent_ids" jsonb not null, "workflow_ids" jsonb not null, "action_ids" jsonb not null, "knowledge_domain_keys" jsonb not null, "tools_config" jsonb null, "memory_config" jsonb null, "behavior_config" jsonb null, "guardrail_policy_id" varchar(64) null, "deployed_at" timestamptz null, "created_at" timestamptz not null, "updated_at" timestamptz not null, primary key ("id"));`);
    this.addSql(`alter table "agents" add constraint "agents_tenant_id_agent_key_unique" unique ("tenant_id", "agent_key");`);

    this.addSql(`create table "agent_user_memory" ("id" uuid not null default gen_random_uuid(), "tenant_id" uuid not null, "agent_id" uuid not null, "user_id" varchar(200) not null, "kind" text not null, "key" varchar(200) not null, "value" jsonb not null, "created_at" timestamptz not null, "updated_at" timestamptz not null, primary key ("id"));`);
    this.addSql(`create index "agent_user_memory_agent_id_index" on "agent_user_memory" ("agent_id");`);
    this.addSql(`alter table "agent_user_memory" add constraint "agent_user_memory_tenant_id_agent_id_user_id_kind_key_unique" unique ("tenant_id", "agent_id", "user_id", "kind", "key");`);

    this.addSql(`create table "agent_sessions" ("id" uuid not null, "tenant_id" uuid not null, "agent_id" uuid not null, "user_id" varchar(200) null, "status" text not null default 'active', "turns" int not null default 0, "last_activity_at" timestamptz not null, "created_at" timestamptz not null, primary key ("id"));`);
    this.addSql(`create index "agent_sessions_tenant_id_agent_id_last_activity_at_index" on "agent_sessions" ("tenant_id", "agent_id", "last_activity_at");`);
    this.addSql(`create index "agent_sessions_last_activity_at_index" on "agent_sessions" ("last_activity_at");`);

    this.addSql(`create table "agent_messages" ("id" uuid not null default gen_random_uuid(), "tenant_id" uuid not null, "session_id" uuid not null, "run_id" uuid null, "role" text not null, "content" text not null, "tokens" int not null default 0, "created_at" timestamptz not null, primary key ("id"));`);
    this.addSql(`create index "agent_messages_tenant_id_index" on "agent_messages" ("tenant_id");`);
    this.addSql(`create index "agent_messages_session_id_created_at_index" on "agent_messages" ("session_id", "created_at");`);

    this.addSql(`create table "agent_runs" ("id" uuid not null, "tenant_id" uuid not null, "agent_id" uuid not null, "session_id" uuid not null, "user_id" varchar(200) null, "status" text not null default 'running', "input" jsonb not null, "output" text null, "model" varchar(200) null, "steps" int not null default 0, "total_tokens" int not null default 0, "total_cost" numeric(14,6) not null default '0', "total_latency_ms" int not null default 0, "max_cost_usd" numeric(14,6) null, "error" jsonb null, "started_at" timestamptz not null, "completed_at" timestamptz null, primary key ("id"));`);
    this.addSql(`create index "agent_runs_tenant_id_agent_id_started_at_index" on "agent_runs" ("tenant_id", "agent_id", "started_at");`);
    this.addSql(`create index "agent_runs_session_id_started_at_index" on "agent_runs" ("session_id", "started_at");`);

    this.addSql(`alter table "run_steps" add constraint "run_steps_tenant_id_foreign" foreign key ("tenant_id") references "tenants" ("id") on delete cascade;`);

    this.addSql(`alter table "agents" add constraint "agents_tenant_id_foreign" foreign key ("tenant_id") references "tenants" ("id") on delete cascade;`);
    this.addSql(`alter table "agents" add constraint "agents_status_check" check ("status" in ('draft', 'active', 'inactive', 'error'));`);

    this.addSql(`alter table "agent_user_memory" add constraint "agent_user_memory_tenant_id_foreign" foreign key ("tenant_id") references "tenants" ("id") on delete cascade;`);
    this.addSql(`alter table "agent_user_memory" add constraint "agent_user_memory_agent_id_foreign" foreign key ("agent_id") references "agents" ("id") on delete cascade;`);
    this.addSql(`alter table "agent_user_memory" add constraint "agent_user_memory_kind_check" check ("kind" in ('preference', 'memory'));`);

    this.addSql(`alter table "agent_sessions" add constraint "agent_sessions_tenant_id_foreign" foreign key ("tenant_id") references "tenants" ("id") on delete cascade;`);
    this.addSql(`alter table "agent_sessions" add constraint "agent_sessions_agent_id_foreign" foreign key ("agent_id") references "agents" ("id") on delete cascade;`);
    this.addSql(`alter table "agent_sessions" add constraint "agent_sessions_status_check" check ("status" in ('active', 'needs_input', 'expired'));`);

    this.addSql(`alter table "agent_messages" add constraint "agent_messages_tenant_id_foreign" foreign key ("tenant_id") references "tenants" ("id") on delete cascade;`);
    this.addSql(`alter table "agent_messages" add constraint "agent_messages_session_id_foreign" foreign key ("session_id") references "agent_sessions" ("id") on delete cascade;`);
    this.addSql(`alter table "agent_messages" add constraint "agent_messages_role_check" check ("role" in ('user', 'assistant'));`);

    this.addSql(`alter table "agent_runs" add constraint "agent_runs_tenant_id_foreign" foreign key ("tenant_id") references "tenants" ("id") on delete cascade;`);
    this.addSql(`alter table "agent_runs" add constraint "agent_runs_agent_id_foreign" foreign key ("agent_id") references "agents" ("id") on delete cascade;`);
    this.addSql(`alter table "agent_runs" add constraint "agent_runs_session_id_foreign" foreign key ("session_id") references "agent_sessions" ("id") on delete cascade;`);
    this.addSql(`alter table "agent_runs" add constraint "agent_runs_status_check" check ("status" in ('running', 'completed', 'failed', 'max_steps_reached', 'budget_exhausted', 'guardrail_blocked', 'needs_input', 'cancelled'));`);
  }

  override down(): void | Promise<void> {
    this.addSql(`alter table "agent_user_memory" drop constraint "agent_user_memory_agent_id_foreign";`);
    this.addSql(`alter table "agent_sessions" drop constraint "agent_sessions_agent_id_foreign";`);
    this.addSql(`alter table "agent_runs" drop constraint "agent_runs_agent_id_foreign";`);
    this.addSql(`alter table "agent_messages" drop constraint "agent_messages_session_id_foreign";`);
    this.addSql(`alter table "agent_runs" drop constraint "agent_runs_session_id_foreign";`);

    this.addSql(`drop table if exists "run_steps" cascade;`);
    this.addSql(`drop table if exists "agents" cascade;`);
    this.addSql(`drop table if exists "agent_user_memory" cascade;`);
    this.addSql(`drop table if exists "agent_sessions" cascade;`);
    this.addSql(`drop table if exists "agent_messages" cascade;`);
    this.addSql(`drop table if exists "agent_runs" cascade;`);
  }

}
