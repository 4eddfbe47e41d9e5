import { Migration } from '@mikro-orm/migrations';

// An eval suite's fallback chain for its judge's model, and the chain a run took when it started
// (a later suite edit does not change a run, as with its judge_model).
export class Migration20261128160100_model_fallbacks extends Migration {

  override name = 'Migration20261128160100_model_fallbacks';

  override up(): void | Promise<void> {
    this.addSql(`alter table "eval_suites" add column if not exists "fallback_models" jsonb null;`);
    this.addSql(`alter table "eval_runs" add column if not exists "judge_fallback_models" jsonb null;`);
  }

  override down(): void | Promise<void> {
    this.addSql(`alter table "eval_suites" drop column if exists "fallback_models";`);
    this.addSql(`alter table "eval_runs" drop column if exists "judge_fallback_models";`);
  }

}
