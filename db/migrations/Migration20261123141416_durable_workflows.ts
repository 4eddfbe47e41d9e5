import { Migration } from '@mikro-orm/migrations';

export class Migration20261123141416_durable_workflows extends Migration {

  override name = 'Migration20261123141416_durable_workflows';

  override up(): void | Promise<void> {
    this.addSql(`create table "idempotency_keys" ("id" uuid not null default gen_random_uuid(), "tenant_id" uuid not null, "scope" varchar(100) not null, "key" varchar(255) not null, "request_hash" varchar(64) not null, "run_id" uuid null, "result" jsonb null, "created_at" timestamptz not null, primary key ("id"));`);
    this.addSql(`create index "idempotency_keys_created_at_index" on "idempotency_keys" ("created_at");`);
    this.addSql(`alter table "idempotency_keys" add constraint "idempotency_keys_tenant_id_scope_key_unique" unique ("tenant_id", "scope", "key");`);

    this.addSql(`create table "workflow_approvals" ("id" uuid not null, "tenant_id" uuid not null, "workflow_id" uuid not null, "run_id" uuid not null, "step_id" varchar(100) not null, "loop_index" int null, "message" text not null, "status" text not null default 'pending', "comment" text null, "decided_by" varchar(320) null, "decided_at" timestamptz null, "expires_at" timestamptz null, "created_at" timestamptz not null, primary key ("id"));`);
    this.addSql(`create index "workflow_approvals_tenant_id_index" on "workflow_approvals" ("tenant_id");`);
    this.addSql(`create index "workflow_approvals_run_id_index" on "workflow_approvals" ("run_id");`);

    this.addSql(`create table "workflow_schedule_ticks" ("id" uuid not null default gen_random_uuid(), "workflow_id" uuid not null, "tick_at" timestamptz not null, "run_id" uuid null, "created_at" timestamptz not null, primary key ("id"));`);
    this.addSql(`alter table "workflow_schedule_ticks" add constraint "workflow_schedule_ticks_workflow_id_tick_at_unique" unique ("workflow_id", "tick_at");`);

    this.addSql(`alter table "workflows" add "trigger_event" varchar(200) null, add "webhook_slug" varchar(64) null, add "webhook_secret" text null, add "previous_webhook_secret" text null, add "previous_secret_valid_until" timestamptz null;`);
    this.addSql(`alter table "workflows" add constraint "workflows_webhook_slug_unique" unique ("webhook_slug");`);

    this.addSql(`alter table "workflow_runs" add "environment_id" uuid null, add "owner_id" varchar(64) null, add "wait_kind" varchar(16) null, add "approval_id" uuid null, add "resume_at" timestamptz null, add "resume" jsonb null, add "callback_seq" int not null default 0, add "callback_key" varchar(64) null, add "early_callback" jsonb null, add "callback_url" text null;`);
    this.addSql(`create index "workflow_runs_workflow_id_status_index" on "workflow_runs" ("workflow_id", "status");`);
    this.addSql(`create index "workflow_runs_status_updated_at_index" on "workflow_runs" ("status", "updated_at");`);

    this.addSql(`alter table "idempotency_keys" add constraint "idempotency_keys_tenant_id_foreign" foreign key ("tenant_id") references "tenants" ("id") on delete cascade;`);

    this.addSql(`alter table "workflow_approvals" add constraint "workflow_approvals_tenant_id_foreign" foreign key ("tenant_id") references "tenants" ("id") on delete cascade;`);
    this.addSql(`alter table "workflow_approvals" add constraint "workflow_approvals_workflow_id_foreign" foreign key ("workflow_id") references "workflows" ("id") on delete cascade;`);
    this.addSql(`alter table "workflow_approvals" add constraint "workflow_approvals_run_id_foreign" foreign key ("run_id") references "workflow_runs" ("id") on delete cascade;`);
    this.addSql(`alter table "workflow_approvals" add constraint "workflow_approvals_status_check" check ("status" in ('pending', 'approved', 'rejected', 'timed_out', 'cancelled'));`);

    this.addSql(`alter table "workflow_schedule_ticks" add constraint "workflow_schedule_ticks_workflow_id_foreign" foreign key ("workflow_id") references "workflows" ("id") on delete cascade;`);
  }

  override down(): void | Promise<void> {
    this.addSql(`drop table if exists "idempotency_keys" cascade;`);
    this.addSql(`drop table if exists "workflow_approvals" cascade;`);
    this.addSql(`drop table if exists "workflow_schedule_ticks" cascade;`);

    this.addSql(`drop index "workflow_runs_workflow_id_status_index";`);
    this.addSql(`drop index "workflow_runs_status_updated_at_index";`);
    this.addSql(`alter table "workflow_runs" drop column "environment_id", drop column "owner_id", drop column "wait_kind", drop column "approval_id", drop column "resume_at", drop column "resume", drop column "callback_seq", drop column "callback_key", drop column "early_callback", drop column "callback_url";`);

    this.addSql(`alter table "workflows" drop constraint "workflows_webhook_slug_unique";`);
    this.addSql(`alter table "workflows" drop column "trigger_event", drop column "webhook_slug", drop column "webhook_secret", drop column "previous_webhook_secret", drop column "previous_secret_valid_until";`);
  }

}
