import { Migration } from '@mikro-orm/migrations';

export class Migration20261123125113_workflows extends Migration {

  override name = 'Migration20261123125113_workflows';

  override up(): void | Promise<void> {
    this.addSql(`create table "workflows" ("id" uuid not null default gen_random_uuid(), "tenant_id" uuid not null, "workflow_key" varchar(100) not null, "name" varchar(200) not null, "description" text null, "status" text not null default 'draft', "is_active" boolean not null default false, "trigger_type" varchar(32) not null default 'manual', "max_concurrent_runs" int null, "live_version" int null, "live_steps" jsonb null, "draft_steps" jsonb null, "created_at" timestamptz not null, "updated_at" timestamptz not null, primary key ("id"));`);
    this.addSql(`alter table "workflows" add constraint "workflows_tenant_id_workflow_key_unique" unique ("tenant_id", "workflow_key");`);

    this.addSql(`create table "workflow_runs" ("id" uuid not null, "tenant_id" uuid not null, "workflow_id" uuid not null, "version" int null, "definition" jsonb null, "scope" text not null, "conversation_id" uuid not null, "status" text not null default 'running', "triggered_by" varchar(32) not null, "input" jsonb not null, "output" jsonb null, "next_step_id" varchar(100) null, "steps_done" int not null default 0, "error" jsonb null, "started_at" timestamptz not null, "updated_at" timestamptz not null, "completed_at" timestamptz null, primary key ("id"));`);
    this.addSql(`create index "workflow_runs_tenant_id_workflow_id_started_at_index" on "workflow_runs" ("tenant_id", "workflow_id", "started_at");`);
    this.addSql(`create index "workflow_runs_conversation_id_index" on "workflow_runs" ("conversation_id");`);

    this.addSql(`create table "workflow_state" ("id" uuid not null default gen_random_uuid(), "tenant_id" uuid not null, "workflow_id" uuid not null, "scope" text not null, "key" varchar(200) not null, "value" jsonb not null, "expires_at" timestamptz null, "updated_at" timestamptz not null, primary key ("id"));`);
    this.addSql(`create index "workflow_state_tenant_id_index" on "workflow_state" ("tenant_id");`);
    this.addSql(`alter table "workflow_state" add constraint "workflow_state_workflow_id_scope_key_unique" unique ("workflow_id", "scope", "key");`);

    this.addSql(`create table "workflow_versions" ("id" uuid not null default gen_random_uuid(), "tenant_id" uuid not null, "workflow_id" uuid not null, "version" int not null, "name" varchar(200) not null, "description" text null, "steps" jsonb not null, "created_by" varchar(320) null, "created_at" timestamptz not null, primary key ("id"));`);
    this.addSql(`create index "workflow_versions_tenant_id_index" on "workflow_versions" ("tenant_id");`);
    this.addSql(`alter table "workflow_versions" add constraint "workflow_versions_workflow_id_version_unique" unique ("workflow_id", "version");`);

    this.addSql(`alter table "run_steps" add "step_id" varchar(100) null;`);

    this.addSql(`alter table "workflows" add constraint "workflows_tenant_id_foreign" foreign key ("tenant_id") references "tenants" ("id") on delete cascade;`);
    this.addSql(`alter table "workflows" add constraint "workflows_status_check" check ("status" in ('draft', 'active', 'inactive', 'error'));`);

    this.addSql(`alter table "workflow_runs" add constraint "workflow_runs_tenant_id_foreign" foreign key ("tenant_id") references "tenants" ("id") on delete cascade;`);
    this.addSql(`alter table "workflow_runs" add constraint "workflow_runs_workflow_id_foreign" foreign key ("workflow_id") references "workflows" ("id") on delete cascade;`);
    this.addSql(`alter table "workflow_runs" add constraint "workflow_runs_scope_check" check ("scope" in ('live', 'test'));`);
    this.addSql(`alter table "workflow_runs" add constraint "workflow_runs_status_check" check ("status" in ('running', 'completed', 'needs_input', 'awaiting_approval', 'waiting', 'rejected', 'cancelled', 'failed'));`);

    this.addSql(`alter table "workflow_state" add constraint "workflow_state_tenant_id_foreign" foreign key ("tenant_id") references "tenants" ("id") on delete cascade;`);
    this.addSql(`alter table "workflow_state" add constraint "workflow_state_workflow_id_foreign" foreign key ("workflow_id") references "workflows" ("id") on delete cascade;`);
    this.addSql(`alter table "workflow_state" add constraint "workflow_state_scope_check" check ("scope" in ('live', 'test'));`);

    this.addSql(`alter table "workflow_versions" add constraint "workflow_versions_tenant_id_foreign" foreign key ("tenant_id") references "tenants" ("id") on delete cascade;`);
    this.addSql(`alter table "workflow_versions" add constraint "workflow_versions_workflow_id_foreign" foreign key ("workflow_id") references "workflows" ("id") on delete cascade;`);
  }

  override down(): void | Promise<void> {
    this.addSql(`alter table "workflow_runs" drop constraint "workflow_runs_workflow_id_foreign";`);
    this.addSql(`alter table "workflow_state" drop constraint "workflow_state_workflow_id_foreign";`);
    this.addSql(`alter table "workflow_versions" drop constraint "workflow_versions_workflow_id_foreign";`);

    this.addSql(`drop table if exists "workflows" cascade;`);
    this.addSql(`drop table if exists "workflow_runs" cascade;`);
    this.addSql(`drop table if exists "workflow_state" cascade;`);
    this.addSql(`drop table if exists "workflow_versions" cascade;`);

    this.addSql(`alter table "run_steps" drop column "step_id";`);
  }

}
