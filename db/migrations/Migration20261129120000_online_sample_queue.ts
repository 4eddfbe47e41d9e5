import { Migration } from '@mikro-orm/migrations';

// The online evaluation queue is written inside a sampled run's own statement, so its row costs as
// little as it can. No foreign keys: each was a lookup and a row lock of the tenant or the rule in
// every sampled run (deleting a rule deletes its samples, the intake drops any left of a rule gone,
// and a tenant's deletion removes its rows by tenant_id). One index, the primary key (tenant, a
// rising id), which is also the intake's order: the random uuid key and the (tenant, created_at)
// index are gone. Queued samples are kept.
export class Migration20261129120000_online_sample_queue extends Migration {

  override name = 'Migration20261129120000_online_sample_queue';

  override up(): void | Promise<void> {
    this.addSql(`alter table "online_eval_samples" drop constraint "online_eval_samples_tenant_id_foreign";`);
    this.addSql(`alter table "online_eval_samples" drop constraint "online_eval_samples_rule_id_foreign";`);
    this.addSql(`drop index "online_eval_samples_tenant_id_created_at_index";`);
    this.addSql(`alter table "online_eval_samples" drop constraint "online_eval_samples_pkey";`);
    this.addSql(`alter table "online_eval_samples" drop column "id";`);
    this.addSql(`alter table "online_eval_samples" add column "id" bigint generated always as identity;`);
    this.addSql(`alter table "online_eval_samples" add primary key ("tenant_id", "id");`);
  }

  override down(): void | Promise<void> {
    this.addSql(`delete from "online_eval_samples" s where not exists (select 1 from "online_eval_rules" r where r.id = s.rule_id);`);
    this.addSql(`alter table "online_eval_samples" drop constraint "online_eval_samples_pkey";`);
    this.addSql(`alter table "online_eval_samples" drop column "id";`);
    this.addSql(`alter table "online_eval_samples" add column "id" uuid not null default gen_random_uuid();`);
    this.addSql(`alter table "online_eval_samples" add primary key ("id");`);
    this.addSql(`create index "online_eval_samples_tenant_id_created_at_index" on "online_eval_samples" ("tenant_id", "created_at");`);
    this.addSql(`alter table "online_eval_samples" add constraint "online_eval_samples_tenant_id_foreign" foreign key ("tenant_id") references "tenants" ("id") on update cascade on delete cascade;`);
    this.addSql(`alter table "online_eval_samples" add constraint "online_eval_samples_rule_id_foreign" foreign key ("rule_id") references "online_eval_rules" ("id") on update cascade on delete cascade;`);
  }

}
