import { Migration } from '@mikro-orm/migrations';

// Online evaluation: sampling rules that score production runs with a suite's scorers, the queue a
// run writes its sample into (inside its own statement), one eval run per rule and UTC day holding
// the scored samples ("live windows", the same result shape as offline runs), and monitors with the
// history of their state changes.
export class Migration20261129060000_online_evals extends Migration {

  override name = 'Migration20261129060000_online_evals';

  override up(): void | Promise<void> {
    this.addSql(`create table "online_eval_rules" ("id" uuid not null default gen_random_uuid(), "tenant_id" uuid not null, "name" varchar(200) not null, "suite_id" uuid not null, "target_kind" text not null, "domain_key" varchar(100) null, "intent_key" varchar(100) null, "agent_key" varchar(100) null, "workflow_key" varchar(100) null, "step_id" varchar(100) null, "sample_rate" double precision not null, "filter" jsonb null, "expected_output" jsonb null, "daily_cap" int not null, "enabled" boolean not null default true, "created_at" timestamptz not null, "updated_at" timestamptz not null, primary key ("id"));`);
    this.addSql(`alter table "online_eval_rules" add constraint "online_eval_rules_target_kind_check" check ("target_kind" in ('intent', 'agent', 'workflow_step'));`);
    this.addSql(`alter table "online_eval_rules" add constraint "online_eval_rules_tenant_id_name_unique" unique ("tenant_id", "name");`);
    this.addSql(`create index "online_eval_rules_target_index" on "online_eval_rules" ("tenant_id", "target_kind", "domain_key", "intent_key") where "enabled";`);
    this.addSql(`alter table "online_eval_rules" add constraint "online_eval_rules_tenant_id_foreign" foreign key ("tenant_id") references "tenants" ("id") on update cascade on delete cascade;`);
    this.addSql(`alter table "online_eval_rules" add constraint "online_eval_rules_suite_id_foreign" foreign key ("suite_id") references "eval_suites" ("id") on update cascade on delete cascade;`);

    this.addSql(`create table "online_eval_samples" ("id" uuid not null default gen_random_uuid(), "tenant_id" uuid not null, "rule_id" uuid not null, "source_kind" text not null, "source_id" varchar(100) not null, "input" jsonb not null, "output" jsonb null, "latency_ms" int not null default 0, "cost_usd" numeric(14,6) not null default 0, "created_at" timestamptz not null default now(), primary key ("id"));`);
    this.addSql(`create index "online_eval_samples_tenant_id_created_at_index" on "online_eval_samples" ("tenant_id", "created_at");`);
    this.addSql(`alter table "online_eval_samples" add constraint "online_eval_samples_tenant_id_foreign" foreign key ("tenant_id") references "tenants" ("id") on update cascade on delete cascade;`);
    this.addSql(`alter table "online_eval_samples" add constraint "online_eval_samples_rule_id_foreign" foreign key ("rule_id") references "online_eval_rules" ("id") on update cascade on delete cascade;`);

    this.addSql(`alter table "eval_runs" add column "online_rule_id" uuid null, add column "window_day" date null, add column "samples_capped" int not null default 0;`);
    this.addSql(`alter table "eval_runs" add constraint "eval_runs_online_rule_id_foreign" foreign key ("online_rule_id") references "online_eval_rules" ("id") on update cascade on delete set null;`);
    this.addSql(`create unique index "eval_runs_online_window_unique" on "eval_runs" ("online_rule_id", "window_day");`);
    this.addSql(`alter table "eval_runs" drop constraint "eval_runs_execution_mode_check";`);
    this.addSql(`alter table "eval_runs" add constraint "eval_runs_execution_mode_check" check ("execution_mode" in ('liya_intent', 'external_output', 'online'));`);
    this.addSql(`alter table "eval_runs" drop constraint "eval_runs_triggered_by_check";`);
    this.addSql(`alter table "eval_runs" add constraint "eval_runs_triggered_by_check" check ("triggered_by" in ('dashboard', 'api', 'online'));`);

    this.addSql(`alter table "eval_results" add column "source_kind" text null, add column "source_id" varchar(100) null, add column "source_latency_ms" int null, add column "source_cost_usd" numeric(14,6) null;`);

    this.addSql(`create table "eval_monitors" ("id" uuid not null default gen_random_uuid(), "tenant_id" uuid not null, "rule_id" uuid not null, "name" varchar(200) not null, "metric" text not null, "dimension" varchar(50) null, "direction" text not null, "threshold" double precision not null, "window_minutes" int not null, "window_samples" int null, "min_samples" int not null, "confidence" double precision not null, "enabled" boolean not null default true, "state" text not null default 'ok', "last_value" double precision null, "last_bound" double precision null, "last_n" int not null default 0, "evaluated_at" timestamptz null, "changed_at" timestamptz null, "created_at" timestamptz not null, "updated_at" timestamptz not null, primary key ("id"));`);
    this.addSql(`alter table "eval_monitors" add constraint "eval_monitors_metric_check" check ("metric" in ('mean_score', 'pass_rate', 'check_failure_rate', 'cost_usd', 'latency_ms'));`);
    this.addSql(`alter table "eval_monitors" add constraint "eval_monitors_direction_check" check ("direction" in ('below', 'above'));`);
    this.addSql(`alter table "eval_monitors" add constraint "eval_monitors_state_check" check ("state" in ('ok', 'firing'));`);
    this.addSql(`alter table "eval_monitors" add constraint "eval_monitors_tenant_id_name_unique" unique ("tenant_id", "name");`);
    this.addSql(`create index "eval_monitors_rule_id_index" on "eval_monitors" ("rule_id");`);
    this.addSql(`alter table "eval_monitors" add constraint "eval_monitors_tenant_id_foreign" foreign key ("tenant_id") references "tenants" ("id") on update cascade on delete cascade;`);
    this.addSql(`alter table "eval_monitors" add constraint "eval_monitors_rule_id_foreign" foreign key ("rule_id") references "online_eval_rules" ("id") on update cascade on delete cascade;`);

    this.addSql(`create table "eval_monitor_changes" ("id" uuid not null default gen_random_uuid(), "tenant_id" uuid not null, "monitor_id" uuid not null, "state" text not null, "value" double precision null, "bound" double precision null, "n" int not null, "threshold" double precision not null, "at" timestamptz not null default now(), primary key ("id"));`);
    this.addSql(`create index "eval_monitor_changes_monitor_id_at_index" on "eval_monitor_changes" ("monitor_id", "at" desc, "id" desc);`);
    this.addSql(`alter table "eval_monitor_changes" add constraint "eval_monitor_changes_tenant_id_foreign" foreign key ("tenant_id") references "tenants" ("id") on update cascade on delete cascade;`);
    this.addSql(`alter table "eval_monitor_changes" add constraint "eval_monitor_changes_monitor_id_foreign" foreign key ("monitor_id") references "eval_monitors" ("id") on update cascade on delete cascade;`);

    // eval.run.completed and .failed are not sent for live windows.
    this.addSql(`create or replace function "liya_eval_run_events"() returns trigger language plpgsql as $$
      begin
        if tg_op = 'UPDATE' and old.status = new.status then return null; end if;
        if new.status not in ('completed', 'failed') then return null; end if;
        -- A live window completes after every batch of samples: its scores are the monitors' to report.
        if new.execution_mode = 'online' then return null; end if;
        if not exists (select 1 from event_subscriptions s where s.tenant_id = new.tenant_id) then return null; end if;
        perform liya_emit(new.tenant_id, 'eval.run.' || new.status, jsonb_build_object('run_id', new.id, 'suite_id', new.suite_id,
          'name', new.name, 'domain', new.domain_key, 'intent', new.intent_key, 'status', new.status, 'mean_score', new.mean_score,
          'cases_total', new.cases_total, 'cases_passed', new.cases_passed,
          'pass_rate', case when new.cases_total > 0 then round(new.cases_passed::numeric / new.cases_total, 4)::float8 end,
          'judge_cost_usd', new.judge_total_cost_usd::float8, 'error', liya_error(new.error),
          'started_at', liya_iso(new.started_at), 'completed_at', liya_iso(new.completed_at)), new.domain_key, null, null);
        return null;
      end $$;`);

    // The tenant's own monthly cap on online judging (null: the plan's default for it).
    this.addSql(`alter table "tenants" add column "online_judge_budget_usd" numeric(14,6) null;`);
  }

  override down(): void | Promise<void> {
    this.addSql(`create or replace function "liya_eval_run_events"() returns trigger language plpgsql as $$
      begin
        if tg_op = 'UPDATE' and old.status = new.status then return null; end if;
        if new.status not in ('completed', 'failed') then return null; end if;
        if not exists (select 1 from event_subscriptions s where s.tenant_id = new.tenant_id) then return null; end if;
        perform liya_emit(new.tenant_id, 'eval.run.' || new.status, jsonb_build_object('run_id', new.id, 'suite_id', new.suite_id,
          'name', new.name, 'domain', new.domain_key, 'intent', new.intent_key, 'status', new.status, 'mean_score', new.mean_score,
          'cases_total', new.cases_total, 'cases_passed', new.cases_passed,
          'pass_rate', case when new.cases_total > 0 then round(new.cases_passed::numeric / new.cases_total, 4)::float8 end,
          'judge_cost_usd', new.judge_total_cost_usd::float8, 'error', liya_error(new.error),
          'started_at', liya_iso(new.started_at), 'completed_at', liya_iso(new.completed_at)), new.domain_key, null, null);
        return null;
      end $$;`);
    this.addSql(`alter table "tenants" drop column "online_judge_budget_usd";`);
    this.addSql(`drop table if exists "eval_monitor_changes" cascade;`);
    this.addSql(`drop table if exists "eval_monitors" cascade;`);
    this.addSql(`alter table "eval_results" drop column "source_kind", drop column "source_id", drop column "source_latency_ms", drop column "source_cost_usd";`);
    this.addSql(`delete from "eval_runs" where "execution_mode" = 'online';`);
    this.addSql(`alter table "eval_runs" drop constraint "eval_runs_triggered_by_check";`);
    this.addSql(`alter table "eval_runs" add constraint "eval_runs_triggered_by_check" check ("triggered_by" in ('dashboard', 'api'));`);
    this.addSql(`alter table "eval_runs" drop constraint "eval_runs_execution_mode_check";`);
    this.addSql(`alter table "eval_runs" add constraint "eval_runs_execution_mode_check" check ("execution_mode" in ('liya_intent', 'external_output'));`);
    this.addSql(`drop index "eval_runs_online_window_unique";`);
    this.addSql(`alter table "eval_runs" drop column "online_rule_id", drop column "window_day", drop column "samples_capped";`);
    this.addSql(`drop table if exists "online_eval_samples" cascade;`);
    this.addSql(`drop table if exists "online_eval_rules" cascade;`);
  }

}
