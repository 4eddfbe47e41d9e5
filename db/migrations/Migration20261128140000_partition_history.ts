import { Migration } from '@mikro-orm/migrations';

// The two largest histories become monthly RANGE partitions of created_at, so a month that every
// tenant's retention has passed leaves by detaching and dropping its partition (no row-by-row
// delete, no bloat), and a read of a time range opens only the months it covers. A primary key on
// a partitioned table must hold the partition column: (id, created_at). Nothing references either
// table, so no foreign key needs the wider key. A DEFAULT partition catches rows for a month whose
// partition does not exist yet (the maintenance job creates them three months ahead); it should
// stay empty.
//
// run_steps stays one table: its writers upsert on (run_id, index), and a unique key on a
// partitioned table must include the partition column, which would make that key weaker.
//
// Also the table of each tenant's own retention settings (server/retention/store/tenant-retention.ts).

/** How the two tables are rebuilt: their own indexes and foreign keys, as they were before. */
const TABLES = [
  {
    name: 'usage_events',
    indexes: [
      `create index "usage_events_tenant_id_created_at_index" on "usage_events" ("tenant_id", "created_at");`,
      `create index "usage_events_eval_judge_index" on "usage_events" ("tenant_id", "created_at") where "kind" = 'eval_judge';`,
    ],
    oldIndexes: ['usage_events_tenant_id_created_at_index', 'usage_events_eval_judge_index'],
    foreignKeys: [
      `alter table "usage_events" add constraint "usage_events_tenant_id_foreign" foreign key ("tenant_id") references "tenants" ("id") on delete cascade;`,
    ],
    oldForeignKeys: ['usage_events_tenant_id_foreign'],
  },
  {
    name: 'session_messages',
    indexes: [`create index "session_messages_session_id_created_at_index" on "session_messages" ("session_id", "created_at");`],
    oldIndexes: ['session_messages_session_id_created_at_index'],
    foreignKeys: [
      `alter table "session_messages" add constraint "session_messages_session_id_foreign" foreign key ("session_id") references "sessions" ("id") on delete cascade;`,
    ],
    oldForeignKeys: ['session_messages_session_id_foreign'],
  },
] as const;

/** Months created ahead of the current one (the maintenance job keeps this many ahead). */
const MONTHS_AHEAD = 3;

/**
 * Creates `<table>_pYYYY_MM` for every UTC month holding a row of `source`, the current month and
 * the next MONTHS_AHEAD, and `<table>_default`. The names are the convention the maintenance job
 * reads back (server/maintenance/store/partitions.ts).
 */
const createPartitionsSql = (table: string, source: string) => `do $$
declare
  m timestamptz;
begin
  for m in
    select distinct date_trunc('month', created_at, 'UTC') from "${source}"
    union
    select date_trunc('month', now(), 'UTC') + make_interval(months => n) from generate_series(0, ${MONTHS_AHEAD}) as n
  loop
    execute format('create table %I partition of "${table}" for values from (%L) to (%L)',
      '${table}_p' || to_char(m at time zone 'UTC', 'YYYY_MM'), m, m + interval '1 month');
  end loop;
  create table "${table}_default" partition of "${table}" default;
end $$;`;

export class Migration20261128140000_partition_history extends Migration {

  override name = 'Migration20261128140000_partition_history';

  override up(): void | Promise<void> {
    for (const t of TABLES) {
      const old = `${t.name}_unpartitioned`;
      this.addSql(`alter table "${t.name}" rename to "${old}";`);
      // The old table's keys and indexes go first: their names are the new table's.
      this.addSql(`alter table "${old}" drop constraint "${t.name}_pkey";`);
      for (const fk of t.oldForeignKeys) this.addSql(`alter table "${old}" drop constraint "${fk}";`);
      for (const index of t.oldIndexes) this.addSql(`drop index if exists "${index}";`);
      // Same columns, defaults, not-nulls and checks as before.
      this.addSql(`create table "${t.name}" (like "${old}" including defaults including constraints) partition by range ("created_at");`);
      this.addSql(createPartitionsSql(t.name, old));
      this.addSql(`insert into "${t.name}" select * from "${old}";`);
      this.addSql(`drop table "${old}";`);
      // Keys and indexes after the copy: one build each instead of an entry (and a check) per row.
      this.addSql(`alter table "${t.name}" add constraint "${t.name}_pkey" primary key ("id", "created_at");`);
      for (const sql of t.indexes) this.addSql(sql);
      for (const sql of t.foreignKeys) this.addSql(sql);
    }

    this.addSql(`create table "tenant_retention" ("tenant_id" uuid not null, "kind" varchar(64) not null, "days" int not null, "updated_by" varchar(320) null, "updated_at" timestamptz not null, primary key ("tenant_id", "kind"));`);
    this.addSql(`alter table "tenant_retention" add constraint "tenant_retention_tenant_id_foreign" foreign key ("tenant_id") references "tenants" ("id") on delete cascade;`);
  }

  override down(): void | Promise<void> {
    this.addSql(`drop table if exists "tenant_retention" cascade;`);
    for (const t of [...TABLES].reverse()) {
      const old = `${t.name}_partitioned`;
      this.addSql(`alter table "${t.name}" rename to "${old}";`);
      this.addSql(`alter table "${old}" drop constraint "${t.name}_pkey";`);
      for (const fk of t.oldForeignKeys) this.addSql(`alter table "${old}" drop constraint if exists "${fk}";`);
      for (const index of t.oldIndexes) this.addSql(`drop index if exists "${index}";`);
      this.addSql(`create table "${t.name}" (like "${old}" including defaults including constraints);`);
      this.addSql(`insert into "${t.name}" select * from "${old}";`);
      // Dropping the parent drops every partition with it.
      this.addSql(`drop table "${old}";`);
      this.addSql(`alter table "${t.name}" add constraint "${t.name}_pkey" primary key ("id");`);
      for (const sql of t.indexes) this.addSql(sql);
      for (const sql of t.foreignKeys) this.addSql(sql);
    }
  }

}
