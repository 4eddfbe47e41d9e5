import { Migration } from '@mikro-orm/migrations';

// The operator's own audit log: what was done to tenants as a whole (a deletion's receipt, an
// export, an import). Outside every tenant on purpose: no tenant_id column and no foreign key, so
// the entry recording a tenant's deletion outlives it.
export class Migration20261128140300_platform_audit extends Migration {

  override name = 'Migration20261128140300_platform_audit';

  override up(): void | Promise<void> {
    this.addSql(`create table "platform_audit_log" ("id" uuid not null default gen_random_uuid(), "actor_type" varchar(32) not null, "actor_name" varchar(320) not null, "action" varchar(100) not null, "target_type" varchar(64) not null, "target_id" varchar(200) null, "details" jsonb not null, "created_at" timestamptz not null default now(), primary key ("id"));`);
    this.addSql(`create index "platform_audit_log_created_at_id_index" on "platform_audit_log" ("created_at" desc, "id" desc);`);
  }

  override down(): void | Promise<void> {
    this.addSql(`drop table if exists "platform_audit_log" cascade;`);
  }

}
