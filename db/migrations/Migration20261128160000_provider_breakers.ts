import { Migration } from '@mikro-orm/migrations';

// The model providers' breakers that are open, shared by every API and worker process: a row per
// provider and credential (the credential as a digest, never the key), deleted when it closes; and
// each tenant's fallback chain.
export class Migration20261128160000_provider_breakers extends Migration {

  override name = 'Migration20261128160000_provider_breakers';

  override up(): void | Promise<void> {
    this.addSql(`create table "provider_breakers" ("key" varchar(200) not null, "provider" varchar(100) not null, "credential" varchar(16) not null, "open_until" timestamptz not null, "updated_at" timestamptz not null default now(), primary key ("key"));`);
    // The tenant's fallback chain, beside its default model.
    this.addSql(`alter table "tenants" add column if not exists "model_fallbacks" jsonb null;`);
    // An agent's own fallback chain, beside its model.
    this.addSql(`alter table "agents" add column if not exists "fallback_models" jsonb null;`);
  }

  override down(): void | Promise<void> {
    this.addSql(`drop table if exists "provider_breakers" cascade;`);
    this.addSql(`alter table "tenants" drop column if exists "model_fallbacks";`);
    this.addSql(`alter table "agents" drop column if exists "fallback_models";`);
  }

}
