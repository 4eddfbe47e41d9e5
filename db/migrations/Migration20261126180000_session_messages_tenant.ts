import { Migration } from '@mikro-orm/migrations';

// A message's tenant is its session's: the session's foreign key (cascading from the tenant) already
// ties each message to an existing tenant, and no read looks messages up by tenant alone. The second
// key and its index cost two foreign-key checks and an index entry on every intent run's write
// (server/intents/store/run-record.ts).
export class Migration20261126180000_session_messages_tenant extends Migration {

  override name = 'Migration20261126180000_session_messages_tenant';

  override up(): void | Promise<void> {
    this.addSql(`alter table "session_messages" drop constraint if exists "session_messages_tenant_id_foreign";`);
    this.addSql(`drop index if exists "session_messages_tenant_id_index";`);
  }

  override down(): void | Promise<void> {
    this.addSql(`alter table "session_messages" add constraint "session_messages_tenant_id_foreign" foreign key ("tenant_id") references "tenants" ("id") on update no action on delete cascade;`);
    this.addSql(`create index "session_messages_tenant_id_index" on "session_messages" ("tenant_id");`);
  }

}
