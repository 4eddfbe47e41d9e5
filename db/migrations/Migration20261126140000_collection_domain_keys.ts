import { Migration } from '@mikro-orm/migrations';

// A collection carries its sorted domain keys in a column of its own, kept by a trigger on
// collection_domains: listing the tenant's collections is then one index scan, without a
// correlated aggregate per row. collection_domains stays the source the retrieval joins read.
export class Migration20261126140000_collection_domain_keys extends Migration {

  override name = 'Migration20261126140000_collection_domain_keys';

  override up(): void | Promise<void> {
    this.addSql(`alter table "collections" add column "domain_keys" text[] not null default '{}';`);
    this.addSql(`update "collections" c set "domain_keys" = coalesce((select array_agg(d.domain_key order by d.domain_key) from "collection_domains" d where d.collection_id = c.id), '{}');`);
    // The list's order (oldest first) read straight from an index.
    this.addSql(`create index "collections_tenant_id_created_at_id_index" on "collections" ("tenant_id", "created_at", "id");`);
    this.addSql(`create function "collection_domain_keys_sync"() returns trigger language plpgsql as $$
      declare target uuid;
      begin
        if tg_op = 'DELETE' then target := old.collection_id; else target := new.collection_id; end if;
        update "collections" c
           set "domain_keys" = coalesce((select array_agg(d.domain_key order by d.domain_key) from "collection_domains" d where d.collection_id = target), '{}')
         where c.id = target;
        return null;
      end $$;`);
    // Per row: attachments come one to a few at a time. A collection deleted by cascade is gone
    // before its attachments, so the update then finds no row.
    this.addSql(`create trigger "collection_domain_keys_sync" after insert or delete or update on "collection_domains" for each row execute function "collection_domain_keys_sync"();`);
  }

  override down(): void | Promise<void> {
    this.addSql(`drop trigger if exists "collection_domain_keys_sync" on "collection_domains";`);
    this.addSql(`drop function if exists "collection_domain_keys_sync"();`);
    this.addSql(`drop index if exists "collections_tenant_id_created_at_id_index";`);
    this.addSql(`alter table "collections" drop column "domain_keys";`);
  }

}
