import { Migration } from '@mikro-orm/migrations';

// Workflow runs count what the plan limits while they run: step executions (loop iterations
// included), how deep they are nested under other runs, and how often a process died executing them.
export class Migration20261126060000_run_limits extends Migration {

  override name = 'Migration20261126060000_run_limits';

  override up(): void | Promise<void> {
    this.addSql(`alter table "workflow_runs" add column "executions" int not null default 0, add column "depth" smallint not null default 1, add column "crashes" smallint not null default 0;`);
  }

  override down(): void | Promise<void> {
    this.addSql(`alter table "workflow_runs" drop column "executions", drop column "depth", drop column "crashes";`);
  }

}
