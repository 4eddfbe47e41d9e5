import { Migration } from '@mikro-orm/migrations';

// Deployments store their plan, never their project; a list reads them newest first; the deploy
// policy each tenant's owners set.
export class Migration20261128130100_deploy_policy extends Migration {

  override name = 'Migration20261128130100_deploy_policy';

  override up(): void | Promise<void> {
    this.addSql(`alter table "deployments" drop column "project";`);
    this.addSql(`alter table "deployments" add column "created_by" varchar(200) null;`);
    this.addSql(`drop index "deployments_tenant_id_index";`);
    this.addSql(`create index "deployments_tenant_id_created_at_index" on "deployments" ("tenant_id", "created_at");`);
    this.addSql(`create table "deploy_policies" ("tenant_id" uuid not null, "deploy_environments" jsonb not null, "prune_environments" jsonb not null, "required_gates" jsonb not null, "min_pass_rate" double precision null, "updated_by" varchar(320) null, "updated_at" timestamptz not null, primary key ("tenant_id"));`);
    this.addSql(`alter table "deploy_policies" add constraint "deploy_policies_tenant_id_foreign" foreign key ("tenant_id") references "tenants" ("id") on update cascade on delete cascade;`);
  }

  override down(): void | Promise<void> {
    this.addSql(`drop table if exists "deploy_policies" cascade;`);
    this.addSql(`drop index "deployments_tenant_id_created_at_index";`);
    this.addSql(`create index "deployments_tenant_id_index" on "deployments" ("tenant_id");`);
    this.addSql(`alter table "deployments" drop column "created_by";`);
    this.addSql(`alter table "deployments" add column "project" jsonb not null default '{}';`);
  }

}
