import { Migration } from '@mikro-orm/migrations';

// A step write finds its run by id and checks that this process still owns it (owner_id). With an
// index on owner_id alone, the planner may take it for that check: every running run of the
// process shares the owner, so under a backlog each step write walked all of them (130 buffers at
// 3,000 queued runs). With the run's id in the index, whichever index the planner takes is exact.
export class Migration20261126131000_run_owner_index_workflows extends Migration {

  override name = 'Migration20261126131000_run_owner_index_workflows';

  override up(): void | Promise<void> {
    this.addSql(`drop index if exists "workflow_runs_running_owner_index";`);
    this.addSql(`create index "workflow_runs_running_owner_index" on "workflow_runs" ("owner_id", "id") where "status" = 'running';`);
  }

  override down(): void | Promise<void> {
    this.addSql(`drop index if exists "workflow_runs_running_owner_index";`);
    this.addSql(`create index "workflow_runs_running_owner_index" on "workflow_runs" ("owner_id") where "status" = 'running';`);
  }

}
