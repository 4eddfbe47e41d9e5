import { Migration } from '@mikro-orm/migrations';

// Usage reports, platform statistics and the evaluation judge budget read a daily rollup of
// usage_events instead of the events themselves, so what they cost does not grow with history and
// what they report survives the retention that deletes old events.
//
// usage_daily is written by one trigger only: a statement-level AFTER INSERT trigger on
// usage_events, so every writer (the usage store and the one-statement run writers that embed its
// insert) moves the rollup in the same transaction without knowing about it. There is no delete
// trigger on purpose: retention deletes old events, and the totals they summarise must stay.
export class Migration20261128140100_usage_daily extends Migration {

  override name = 'Migration20261128140100_usage_daily';

  override up(): void | Promise<void> {
    this.addSql(`create table "usage_daily" (
      "id" uuid not null default gen_random_uuid(), "tenant_id" uuid not null, "day" date not null, "kind" varchar(64) not null,
      "domain" varchar(100) null, "intent" varchar(100) null, "model" varchar(200) null, "environment_id" uuid null,
      "requests" bigint not null default 0, "events" bigint not null default 0, "prompt_tokens" bigint not null default 0,
      "completion_tokens" bigint not null default 0, "total_tokens" bigint not null default 0, "cost_usd" numeric(20,6) not null default '0',
      "latency_ms" bigint not null default 0, primary key ("id"));`);
    this.addSql(`alter table "usage_daily" add constraint "usage_daily_tenant_id_foreign" foreign key ("tenant_id") references "tenants" ("id") on delete cascade;`);
    // The upsert's key: a null domain, intent, model or environment is one group, as GROUP BY has it.
    this.addSql(`create unique index "usage_daily_key" on "usage_daily" ("tenant_id", "day", "kind", "domain", "intent", "model", "environment_id") nulls not distinct;`);
    // Platform-wide reports and statistics read a range of days across every tenant.
    this.addSql(`create index "usage_daily_day_index" on "usage_daily" ("day");`);

    // Groups of the statement's new events, in key order so two transactions lock the rows they
    // share in the same order; the day is the UTC day whatever the session's time zone.
    this.addSql(`create function "usage_daily_add_events"() returns trigger language plpgsql as $$
begin
  insert into usage_daily as d (tenant_id, day, kind, domain, intent, model, environment_id, requests, events, prompt_tokens,
                                completion_tokens, total_tokens, cost_usd, latency_ms)
  select e.tenant_id, (e.created_at at time zone 'UTC')::date, e.kind, e.domain, e.intent, e.model, e.environment_id,
         count(*) filter (where e.counts_as_request), count(*), sum(e.prompt_tokens), sum(e.completion_tokens), sum(e.total_tokens),
         sum(e.cost_usd), sum(e.latency_ms)
    from new_rows e
   group by 1, 2, 3, 4, 5, 6, 7
   order by 1, 2, 3, 4, 5, 6, 7
  on conflict (tenant_id, day, kind, domain, intent, model, environment_id) do update
     set requests = d.requests + excluded.requests, events = d.events + excluded.events,
         prompt_tokens = d.prompt_tokens + excluded.prompt_tokens, completion_tokens = d.completion_tokens + excluded.completion_tokens,
         total_tokens = d.total_tokens + excluded.total_tokens, cost_usd = d.cost_usd + excluded.cost_usd,
         latency_ms = d.latency_ms + excluded.latency_ms;
  return null;
end $$;`);
    // Created before the backfill, in this transaction: the trigger's lock makes inserts wait until
    // the migration commits, and the backfill sees every event committed before it, so no event is
    // counted twice or missed by a server still writing during the upgrade.
    this.addSql(`create trigger "usage_events_daily_rollup" after insert on "usage_events" referencing new table as new_rows
      for each statement execute function "usage_daily_add_events"();`);
    this.addSql(`insert into "usage_daily" (tenant_id, day, kind, domain, intent, model, environment_id, requests, events, prompt_tokens,
                                            completion_tokens, total_tokens, cost_usd, latency_ms)
      select tenant_id, (created_at at time zone 'UTC')::date, kind, domain, intent, model, environment_id,
             count(*) filter (where counts_as_request), count(*), sum(prompt_tokens), sum(completion_tokens), sum(total_tokens),
             sum(cost_usd), sum(latency_ms)
        from "usage_events"
       group by 1, 2, 3, 4, 5, 6, 7;`);

    // The judge budget reads this month's eval_judge spend from the rollup now: the partial index
    // only cost every metered insert.
    this.addSql(`drop index if exists "usage_events_eval_judge_index";`);
    // A report's partial first or last day across the whole platform reads raw events by time.
    // BRIN: events arrive in time order, so a few pages of block ranges answer it, and it costs the
    // hot insert path next to nothing (a B-tree on created_at would be one more entry per event).
    // autosummarize: a block range filled since the last vacuum is summarised as soon as it is full
    // (unsummarised ranges always match, so without it a fresh partition's ranges are all read).
    this.addSql(`create index "usage_events_created_at_brin" on "usage_events" using brin ("created_at") with (autosummarize = on);`);
  }

  override down(): void | Promise<void> {
    this.addSql(`drop index if exists "usage_events_created_at_brin";`);
    this.addSql(`create index "usage_events_eval_judge_index" on "usage_events" ("tenant_id", "created_at") where "kind" = 'eval_judge';`);
    this.addSql(`drop trigger if exists "usage_events_daily_rollup" on "usage_events";`);
    this.addSql(`drop function if exists "usage_daily_add_events"();`);
    this.addSql(`drop table if exists "usage_daily" cascade;`);
  }

}
