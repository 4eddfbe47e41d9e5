import { Migration } from '@mikro-orm/migrations';

export class Migration20261123155733_evals extends Migration {

  override name = 'Migration20261123155733_evals';

  override up(): void | Promise<void> {
    this.addSql(`create table "eval_datasets" ("id" uuid not null default gen_random_uuid(), "tenant_id" uuid not null, "name" varchar(200) not null, "description" text null, "created_at" timestamptz not null, "updated_at" timestamptz not null, primary key ("id"));`);
    this.addSql(`create index "eval_datasets_tenant_id_created_at_index" on "eval_datasets" ("tenant_id", "created_at");`);

    this.addSql(`create table "eval_suites" ("id" uuid not null default gen_random_uuid(), "tenant_id" uuid not null, "name" varchar(200) not null, "domain_key" varchar(100) not null, "intent_key" varchar(100) not null, "dataset_id" uuid not null, "judge_rubric" text null, "pass_threshold" double precision not null default 4, "custom_scorer_expression" text null, "custom_scorer_label" varchar(100) null, "custom_scorer_webhook_url" text null, "custom_scorer_webhook_secret" text null, "baseline_run_id" uuid null, "created_at" timestamptz not null, "updated_at" timestamptz not null, primary key ("id"));`);
    this.addSql(`create index "eval_suites_tenant_id_domain_key_intent_key_index" on "eval_suites" ("tenant_id", "domain_key", "intent_key");`);

    this.addSql(`create table "eval_runs" ("id" uuid not null default gen_random_uuid(), "tenant_id" uuid not null, "suite_id" uuid null, "name" varchar(200) null, "domain_key" varchar(100) null, "intent_key" varchar(100) null, "execution_mode" text not null, "triggered_by" text not null, "status" text not null default 'pending', "stage" varchar(200) null, "progress" int not null default 0, "mean_score" double precision null, "dimension_scores" jsonb null, "cases_total" int not null default 0, "cases_passed" int not null default 0, "cases_done" int not null default 0, "environment_id" uuid null, "judge_rubric" text null, "pass_threshold" double precision not null default 4, "judge_total_cost_usd" numeric(14,6) not null default 0, "judge_model" varchar(200) null, "judge_calls" int not null default 0, "judge_failures" int not null default 0, "judge_cap_reached" boolean not null default false, "model_override" varchar(200) null, "error" jsonb null, "started_at" timestamptz not null, "updated_at" timestamptz not null, "completed_at" timestamptz null, primary key ("id"));`);
    this.addSql(`create index "eval_runs_tenant_id_suite_id_started_at_index" on "eval_runs" ("tenant_id", "suite_id", "started_at");`);
    this.addSql(`create index "eval_runs_tenant_id_started_at_index" on "eval_runs" ("tenant_id", "started_at");`);

    this.addSql(`create table "eval_results" ("id" uuid not null default gen_random_uuid(), "tenant_id" uuid not null, "run_id" uuid not null, "case_id" uuid null, "position" int not null, "status" text not null default 'pending', "input" jsonb not null, "message" text null, "output" jsonb null, "expected_output" jsonb null, "passed" boolean null, "score" double precision null, "dimension_scores" jsonb null, "check" jsonb null, "judge_reasoning" text null, "custom_score" double precision null, "latency_ms" int null, "cost_usd" numeric(14,6) not null default 0, "error" text null, "created_at" timestamptz not null, "completed_at" timestamptz null, primary key ("id"));`);
    this.addSql(`create index "eval_results_tenant_id_index" on "eval_results" ("tenant_id");`);
    this.addSql(`alter table "eval_results" add constraint "eval_results_run_id_position_unique" unique ("run_id", "position");`);

    this.addSql(`create table "eval_reviews" ("id" uuid not null default gen_random_uuid(), "tenant_id" uuid not null, "result_id" uuid not null, "reviewer_id" varchar(320) not null, "verdict" text not null, "corrected_score" double precision null, "note" text null, "created_at" timestamptz not null, primary key ("id"));`);
    this.addSql(`create index "eval_reviews_result_id_index" on "eval_reviews" ("result_id");`);
    this.addSql(`create index "eval_reviews_tenant_id_index" on "eval_reviews" ("tenant_id");`);

    this.addSql(`create table "eval_cases" ("id" uuid not null default gen_random_uuid(), "tenant_id" uuid not null, "dataset_id" uuid null, "position" int not null default 0, "input" jsonb not null, "message" text null, "expected_output" jsonb null, "notes" text null, "created_at" timestamptz not null, primary key ("id"));`);
    this.addSql(`create index "eval_cases_dataset_id_position_index" on "eval_cases" ("dataset_id", "position");`);
    this.addSql(`create index "eval_cases_tenant_id_index" on "eval_cases" ("tenant_id");`);

    this.addSql(`create index "usage_events_eval_judge_index" on "usage_events" ("tenant_id", "created_at") where "kind" = 'eval_judge';`);

    this.addSql(`alter table "eval_datasets" add constraint "eval_datasets_tenant_id_foreign" foreign key ("tenant_id") references "tenants" ("id") on delete cascade;`);

    this.addSql(`alter table "eval_suites" add constraint "eval_suites_tenant_id_foreign" foreign key ("tenant_id") references "tenants" ("id") on delete cascade;`);
    this.addSql(`alter table "eval_suites" add constraint "eval_suites_dataset_id_foreign" foreign key ("dataset_id") references "eval_datasets" ("id") on delete restrict;`);

    this.addSql(`alter table "eval_runs" add constraint "eval_runs_tenant_id_foreign" foreign key ("tenant_id") references "tenants" ("id") on delete cascade;`);
    this.addSql(`alter table "eval_runs" add constraint "eval_runs_suite_id_foreign" foreign key ("suite_id") references "eval_suites" ("id") on delete cascade;`);
    this.addSql(`alter table "eval_runs" add constraint "eval_runs_execution_mode_check" check ("execution_mode" in ('liya_intent', 'external_output'));`);
    this.addSql(`alter table "eval_runs" add constraint "eval_runs_triggered_by_check" check ("triggered_by" in ('dashboard', 'api'));`);
    this.addSql(`alter table "eval_runs" add constraint "eval_runs_status_check" check ("status" in ('pending', 'running', 'completed', 'failed', 'cancelled'));`);

    this.addSql(`alter table "eval_results" add constraint "eval_results_tenant_id_foreign" foreign key ("tenant_id") references "tenants" ("id") on delete cascade;`);
    this.addSql(`alter table "eval_results" add constraint "eval_results_run_id_foreign" foreign key ("run_id") references "eval_runs" ("id") on delete cascade;`);
    this.addSql(`alter table "eval_results" add constraint "eval_results_status_check" check ("status" in ('pending', 'scored', 'errored', 'skipped'));`);

    this.addSql(`alter table "eval_reviews" add constraint "eval_reviews_tenant_id_foreign" foreign key ("tenant_id") references "tenants" ("id") on delete cascade;`);
    this.addSql(`alter table "eval_reviews" add constraint "eval_reviews_result_id_foreign" foreign key ("result_id") references "eval_results" ("id") on delete cascade;`);
    this.addSql(`alter table "eval_reviews" add constraint "eval_reviews_verdict_check" check ("verdict" in ('agree', 'override', 'flag'));`);

    this.addSql(`alter table "eval_cases" add constraint "eval_cases_tenant_id_foreign" foreign key ("tenant_id") references "tenants" ("id") on delete cascade;`);
    this.addSql(`alter table "eval_cases" add constraint "eval_cases_dataset_id_foreign" foreign key ("dataset_id") references "eval_datasets" ("id") on delete cascade;`);
  }

  override down(): void | Promise<void> {
    this.addSql(`drop index if exists "usage_events_eval_judge_index";`);
    this.addSql(`alter table "eval_suites" drop constraint "eval_suites_dataset_id_foreign";`);
    this.addSql(`alter table "eval_cases" drop constraint "eval_cases_dataset_id_foreign";`);
    this.addSql(`alter table "eval_runs" drop constraint "eval_runs_suite_id_foreign";`);
    this.addSql(`alter table "eval_results" drop constraint "eval_results_run_id_foreign";`);
    this.addSql(`alter table "eval_reviews" drop constraint "eval_reviews_result_id_foreign";`);

    this.addSql(`drop table if exists "eval_datasets" cascade;`);
    this.addSql(`drop table if exists "eval_suites" cascade;`);
    this.addSql(`drop table if exists "eval_runs" cascade;`);
    this.addSql(`drop table if exists "eval_results" cascade;`);
    this.addSql(`drop table if exists "eval_reviews" cascade;`);
    this.addSql(`drop table if exists "eval_cases" cascade;`);
  }

}
