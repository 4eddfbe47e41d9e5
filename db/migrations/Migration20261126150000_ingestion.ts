import { Migration } from '@mikro-orm/migrations';

// A small text upload is ingested by the process that accepted it, with no graphile job: the job
// row names that process (owner_id, its heartbeat id) until the ingestion ends. A pending or
// running job whose owner stopped beating is given a job by the recovery sweep; the partial index
// holds only the jobs a process owns now, so the sweep reads a handful of rows, not the table.
export class Migration20261126150000_ingestion extends Migration {

  override name = 'Migration20261126150000_ingestion';

  override up(): void | Promise<void> {
    this.addSql(`alter table "ingestion_jobs" add column "owner_id" varchar(64) null;`);
    this.addSql(`create index "ingestion_jobs_owner_index" on "ingestion_jobs" ("created_at") where "owner_id" is not null;`);
  }

  override down(): void | Promise<void> {
    this.addSql(`drop index if exists "ingestion_jobs_owner_index";`);
    this.addSql(`alter table "ingestion_jobs" drop column "owner_id";`);
  }

}
