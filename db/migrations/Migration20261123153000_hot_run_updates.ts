import { Migration } from '@mikro-orm/migrations';

// Step writes update a run row once per step. With no index on the columns they change and room
// left in each page (fillfactor 80), those updates are HOT: no new index entries per step.
export class Migration20261123153000_hot_run_updates extends Migration {

  override name = 'Migration20261123153000_hot_run_updates';

  override up(): void | Promise<void> {
    this.addSql(`drop index if exists "workflow_runs_status_updated_at_index";`);
    this.addSql(`create index "workflow_runs_running_owner_index" on "workflow_runs" ("owner_id") where "status" = 'running';`);
    this.addSql(`alter table "workflow_runs" set (fillfactor = 80);`);
  }

  override down(): void | Promise<void> {
    this.addSql(`alter table "workflow_runs" reset (fillfactor);`);
    this.addSql(`drop index if exists "workflow_runs_running_owner_index";`);
    this.addSql(`create index "workflow_runs_status_updated_at_index" on "workflow_runs" ("status", "updated_at");`);
  }

}
