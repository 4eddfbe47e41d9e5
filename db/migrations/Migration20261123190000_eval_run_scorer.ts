import { Migration } from '@mikro-orm/migrations';

// A run keeps the custom scorer it started with, like its rubric and threshold: editing the suite
// during a run (or before a resume) does not score the run's cases two ways.
export class Migration20261123190000_eval_run_scorer extends Migration {

  override name = 'Migration20261123190000_eval_run_scorer';

  override up(): void | Promise<void> {
    this.addSql(`alter table "eval_runs" add column "custom_scorer_expression" text null, add column "custom_scorer_webhook_url" text null, add column "custom_scorer_webhook_secret" text null;`);
    this.addSql(`update "eval_runs" r set "custom_scorer_expression" = s."custom_scorer_expression", "custom_scorer_webhook_url" = s."custom_scorer_webhook_url", "custom_scorer_webhook_secret" = s."custom_scorer_webhook_secret"
                   from "eval_suites" s where s."id" = r."suite_id";`);
  }

  override down(): void | Promise<void> {
    this.addSql(`alter table "eval_runs" drop column "custom_scorer_expression", drop column "custom_scorer_webhook_url", drop column "custom_scorer_webhook_secret";`);
  }

}
