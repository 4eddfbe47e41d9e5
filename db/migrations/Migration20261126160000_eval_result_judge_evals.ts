import { Migration } from '@mikro-orm/migrations';

// Each result keeps its judge's calls, cost and failures (over every attempt at the case), so a
// run's counters are a sum over its results: the run loop writes a case without touching the run's
// row, and the counters are recomputed from the results at most every few hundred milliseconds and
// whenever the run's status changes — exact at rest, whatever a crash interrupted. Runs written
// before keep their totals: each is put on the run's first result.
export class Migration20261126160000_eval_result_judge_evals extends Migration {

  override name = 'Migration20261126160000_eval_result_judge_evals';

  override up(): void | Promise<void> {
    this.addSql(`alter table "eval_results" add column "judge_calls" int not null default 0, add column "judge_cost_usd" numeric(14,6) not null default 0, add column "judge_failures" int not null default 0;`);
    this.addSql(`update "eval_results" x set "judge_calls" = r."judge_calls", "judge_cost_usd" = r."judge_total_cost_usd", "judge_failures" = r."judge_failures"
                   from "eval_runs" r
                  where r."id" = x."run_id" and x."position" = (select min(y."position") from "eval_results" y where y."run_id" = r."id");`);
  }

  override down(): void | Promise<void> {
    this.addSql(`alter table "eval_results" drop column "judge_calls", drop column "judge_cost_usd", drop column "judge_failures";`);
  }

}
