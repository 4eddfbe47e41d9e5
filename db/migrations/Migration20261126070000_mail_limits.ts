import { Migration } from '@mikro-orm/migrations';

// Tenant mail is limited by plan: a counter row per tenant and UTC day for the daily quota, the
// sending tenant on each outbox message, room for a list of recipients and a full-length subject.
export class Migration20261126070000_mail_limits extends Migration {

  override name = 'Migration20261126070000_mail_limits';

  override up(): void | Promise<void> {
    this.addSql(`create table "mail_day_counts" ("tenant_id" uuid not null, "day" date not null, "mails" int not null default 0, primary key ("tenant_id", "day"));`);
    this.addSql(`alter table "mail_day_counts" add constraint "mail_day_counts_tenant_id_foreign" foreign key ("tenant_id") references "tenants" ("id") on delete cascade;`);
    this.addSql(`drop index if exists "outbox_messages_to_address_index";`);
    this.addSql(`alter table "outbox_messages" add column "tenant_id" uuid null, alter column "to_address" type text, alter column "subject" type varchar(998);`);
    this.addSql(`alter table "outbox_messages" add constraint "outbox_messages_tenant_id_foreign" foreign key ("tenant_id") references "tenants" ("id") on delete cascade;`);
    this.addSql(`create index "outbox_messages_tenant_id_index" on "outbox_messages" ("tenant_id");`);
  }

  override down(): void | Promise<void> {
    this.addSql(`drop index if exists "outbox_messages_tenant_id_index";`);
    this.addSql(`alter table "outbox_messages" drop constraint "outbox_messages_tenant_id_foreign";`);
    this.addSql(`alter table "outbox_messages" drop column "tenant_id", alter column "to_address" type varchar(320) using left("to_address", 320), alter column "subject" type varchar(300) using left("subject", 300);`);
    this.addSql(`create index "outbox_messages_to_address_index" on "outbox_messages" ("to_address");`);
    this.addSql(`drop table if exists "mail_day_counts" cascade;`);
  }

}
