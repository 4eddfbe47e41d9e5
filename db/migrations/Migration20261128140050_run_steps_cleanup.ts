import { Migration } from '@mikro-orm/migrations';

// A run's trace (run_steps) points at a workflow, agent or evaluation run by (run_kind, run_id): one
// column for three tables, so no foreign key can cascade. Deleting runs (a workflow, an agent, a
// suite, an agent session or retention taking its runs with it) left their steps behind. A
// statement-level AFTER DELETE trigger on each run table deletes the steps of every run the
// statement removed; it fires for cascaded deletes too, once per statement, with the whole set of
// deleted runs in its transition table. The steps are found through run_steps' unique
// (run_id, index) index.
const RUN_TABLES = [
  { table: 'workflow_runs', kind: 'workflow' },
  { table: 'agent_runs', kind: 'agent' },
  { table: 'eval_runs', kind: 'eval' },
] as const;

export class Migration20261128140050_run_steps_cleanup extends Migration {

  override name = 'Migration20261128140050_run_steps_cleanup';

  override up(): void | Promise<void> {
    // `= any(array(...))` rather than a join: the planner then probes the index once per deleted
    // run, whatever it guesses about the transition table's size.
    this.addSql(`create function "delete_steps_of_deleted_runs"() returns trigger language plpgsql as $$
begin
  delete from run_steps where run_kind = TG_ARGV[0] and run_id = any (array(select id from deleted_runs));
  return null;
end $$;`);
    for (const { table, kind } of RUN_TABLES) {
      this.addSql(`create trigger "${table}_delete_steps" after delete on "${table}" referencing old table as deleted_runs
        for each statement execute function "delete_steps_of_deleted_runs"('${kind}');`);
      // The steps already orphaned by deletes before this trigger existed.
      this.addSql(`delete from run_steps s where s.run_kind = '${kind}' and not exists (select 1 from "${table}" r where r.id = s.run_id);`);
    }
  }

  override down(): void | Promise<void> {
    for (const { table } of RUN_TABLES) this.addSql(`drop trigger if exists "${table}_delete_steps" on "${table}";`);
    this.addSql(`drop function if exists "delete_steps_of_deleted_runs"();`);
  }

}
