import { Migration } from '@mikro-orm/migrations';

// Deploys as code: a deployment holds the project it would publish and its gate's eval runs; an
// eval run of a gate runs a draft intent definition instead of the live one.
export class Migration20261126110000_deployments extends Migration {

  override name = 'Migration20261126110000_deployments';

  override up(): void | Promise<void> {
    this.addSql(`create table "deployments" ("id" uuid not null default gen_random_uuid(), "tenant_id" uuid not null, "status" varchar(20) not null, "project" jsonb not null, "plan" jsonb not null, "prune" boolean not null, "min_pass_rate" double precision not null, "base_digest" varchar(64) not null, "gate" jsonb not null, "error" jsonb null, "minted" jsonb not null, "created_at" timestamptz not null, "published_at" timestamptz null, primary key ("id"));`);
    this.addSql(`create index "deployments_tenant_id_index" on "deployments" ("tenant_id");`);
    this.addSql(`alter table "deployments" add constraint "deployments_tenant_id_foreign" foreign key ("tenant_id") references "tenants" ("id") on delete cascade;`);
    this.addSql(`alter table "eval_runs" add column "intent_definition" jsonb null;`);
  }

  override down(): void | Promise<void> {
    this.addSql(`alter table "eval_runs" drop column "intent_definition";`);
    this.addSql(`drop table if exists "deployments" cascade;`);
  }

}
