import { Migration } from '@mikro-orm/migrations';

// Keys with permissions: an environment's permissions (null: every permission), and named keys
// with their own permissions within their environment's, an optional expiry and their creator.
export class Migration20261128130000_key_permissions extends Migration {

  override name = 'Migration20261128130000_key_permissions';

  override up(): void | Promise<void> {
    this.addSql(`alter table "environments" add column "permissions" jsonb null;`);
    this.addSql(`alter table "api_keys" add column "name" varchar(64) null, add column "permissions" jsonb null, add column "expires_at" timestamptz null, add column "created_by" varchar(320) null;`);
    this.addSql(`create unique index "api_keys_tenant_name_unique" on "api_keys" ("tenant_id", "name") where "name" is not null and "revoked_at" is null;`);
  }

  override down(): void | Promise<void> {
    this.addSql(`drop index "api_keys_tenant_name_unique";`);
    this.addSql(`alter table "api_keys" drop column "name", drop column "permissions", drop column "expires_at", drop column "created_by";`);
    this.addSql(`alter table "environments" drop column "permissions";`);
  }

}
