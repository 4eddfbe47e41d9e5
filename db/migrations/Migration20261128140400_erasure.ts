import { Migration } from '@mikro-orm/migrations';

// Erasing one end user finds their rows by index instead of reading the tenant's whole history:
// intent and agent sessions by (tenant_id, user_id); workflow runs by the `user_id` of their input.
// Each costs one more index entry where the row is written: a session on each of its turns (its
// activity time is indexed already, so those updates were not HOT anyway); a workflow run once, as
// its input never changes after the insert and its step writes stay HOT updates. The run index is
// partial: runs whose input names no user (webhooks, schedules) get no entry.
export class Migration20261128140400_erasure extends Migration {

  override name = 'Migration20261128140400_erasure';

  override up(): void | Promise<void> {
    this.addSql(`create index if not exists "sessions_tenant_id_user_id_index" on "sessions" ("tenant_id", "user_id");`);
    this.addSql(`create index if not exists "agent_sessions_tenant_id_user_id_index" on "agent_sessions" ("tenant_id", "user_id");`);
    this.addSql(
      `create index if not exists "workflow_runs_tenant_id_input_user_id_index" on "workflow_runs" ("tenant_id", ("input" ->> 'user_id')) where "input" ? 'user_id';`,
    );
  }

  override down(): void | Promise<void> {
    this.addSql(`drop index if exists "workflow_runs_tenant_id_input_user_id_index";`);
    this.addSql(`drop index if exists "agent_sessions_tenant_id_user_id_index";`);
    this.addSql(`drop index if exists "sessions_tenant_id_user_id_index";`);
  }

}
