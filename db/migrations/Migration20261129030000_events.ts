import { Migration } from '@mikro-orm/migrations';

// Events out: the tenants' subscriptions, the events recorded for them (in the transaction of the
// change), one delivery per event and subscription, and every attempt of each delivery.
export class Migration20261129030000_events extends Migration {

  override name = 'Migration20261129030000_events';

  override up(): void | Promise<void> {
    this.addSql(`create table "event_subscriptions" ("id" uuid not null default gen_random_uuid(), "tenant_id" uuid not null, "url" varchar(2048) not null, "description" varchar(500) null, "event_types" jsonb null, "filter_domain" varchar(100) null, "filter_workflow_id" varchar(64) null, "filter_agent_key" varchar(100) null, "secret" text not null, "previous_secret" text null, "previous_secret_expires_at" timestamptz null, "enabled" boolean not null default true, "paused_at" timestamptz null, "paused_reason" varchar(500) null, "failed_deliveries" int not null default 0, "created_at" timestamptz not null, "updated_at" timestamptz not null, primary key ("id"));`);
    this.addSql(`create index "event_subscriptions_tenant_id_created_at_index" on "event_subscriptions" ("tenant_id", "created_at" desc, "id" desc);`);

    this.addSql(`create table "events" ("id" varchar(40) not null, "tenant_id" uuid not null, "type" varchar(100) not null, "version" int not null, "data" jsonb not null, "domain" varchar(100) null, "workflow_id" varchar(64) null, "agent_key" varchar(100) null, "created_at" timestamptz not null default now(), primary key ("id"));`);
    this.addSql(`create index "events_tenant_id_created_at_id_index" on "events" ("tenant_id", "created_at" desc, "id" desc);`);

    this.addSql(`create table "event_deliveries" ("id" uuid not null default gen_random_uuid(), "tenant_id" uuid not null, "event_id" varchar(40) not null, "subscription_id" uuid not null, "status" varchar(16) not null, "attempts" int not null default 0, "next_attempt_at" timestamptz null, "last_status" int null, "last_error" varchar(500) null, "created_at" timestamptz not null default now(), "delivered_at" timestamptz null, primary key ("id"));`);
    this.addSql(`create index "event_deliveries_pending_index" on "event_deliveries" ("tenant_id", "next_attempt_at") where "status" = 'pending';`);
    this.addSql(`create index "event_deliveries_event_id_index" on "event_deliveries" ("event_id");`);
    this.addSql(`create index "event_deliveries_subscription_id_created_at_index" on "event_deliveries" ("subscription_id", "created_at" desc, "id" desc);`);

    this.addSql(`create table "event_delivery_attempts" ("id" uuid not null default gen_random_uuid(), "tenant_id" uuid not null, "delivery_id" uuid not null, "attempt" int not null, "status_code" int null, "latency_ms" int not null, "response_excerpt" varchar(500) null, "error" varchar(500) null, "created_at" timestamptz not null default now(), primary key ("id"));`);
    this.addSql(`create index "event_delivery_attempts_delivery_id_index" on "event_delivery_attempts" ("delivery_id", "attempt");`);



    // Recording: liya_event_wanted answers whether any enabled subscription of the tenant takes an
    // event (an index probe: a tenant without subscriptions pays no more), liya_record_event writes
    // the event, one delivery per subscription that takes it, and queues the tenant's delivery job,
    // all in the transaction of the change that fired it. Opt-in types (high-volume intent runs)
    // go only to subscriptions that name them. The tenant's deliveries run in one graphile-worker
    // queue ("events:<tenant>"), so one tenant's slow receiver holds one job slot at most.
    this.addSql(`create function "liya_event_wanted"(p_tenant uuid, p_type text, p_domain text, p_workflow_id text, p_agent_key text, p_opt_in boolean)
      returns boolean language sql stable as $$
      select exists (select 1 from event_subscriptions s where s.tenant_id = p_tenant and s.enabled
        and ((s.event_types is null and not p_opt_in) or jsonb_exists(s.event_types, p_type))
        and (s.filter_domain is null or s.filter_domain = p_domain)
        and (s.filter_workflow_id is null or s.filter_workflow_id = p_workflow_id)
        and (s.filter_agent_key is null or s.filter_agent_key = p_agent_key))
    $$;`);
    this.addSql(`create function "liya_record_event"(p_tenant uuid, p_type text, p_data jsonb, p_domain text, p_workflow_id text, p_agent_key text, p_opt_in boolean)
      returns void language plpgsql as $$
      declare v_id text := 'evt_' || replace(gen_random_uuid()::text, '-', '');
      begin
        with e as (
          insert into events (id, tenant_id, type, version, data, domain, workflow_id, agent_key, created_at)
          values (v_id, p_tenant, p_type, 1, jsonb_strip_nulls(p_data), p_domain, p_workflow_id, p_agent_key, now()) returning id
        )
        insert into event_deliveries (tenant_id, event_id, subscription_id, status, attempts, next_attempt_at, created_at)
        select p_tenant, e.id, s.id, 'pending', 0, now(), now()
          from e, event_subscriptions s
         where s.tenant_id = p_tenant and s.enabled
           and ((s.event_types is null and not p_opt_in) or jsonb_exists(s.event_types, p_type))
           and (s.filter_domain is null or s.filter_domain = p_domain)
           and (s.filter_workflow_id is null or s.filter_workflow_id = p_workflow_id)
           and (s.filter_agent_key is null or s.filter_agent_key = p_agent_key);
        perform graphile_worker.add_job('deliver_events', json_build_object('tenant_id', p_tenant), queue_name => 'events:' || p_tenant,
          job_key => 'events:' || p_tenant, max_attempts => 25);
      end $$;`);
    // Both in one call, for the triggers: checks, and records when wanted.
    this.addSql(`create function "liya_emit"(p_tenant uuid, p_type text, p_data jsonb, p_domain text, p_workflow_id text, p_agent_key text, p_opt_in boolean default false)
      returns void language plpgsql as $$
      begin
        if liya_event_wanted(p_tenant, p_type, p_domain, p_workflow_id, p_agent_key, p_opt_in) then
          perform liya_record_event(p_tenant, p_type, p_data, p_domain, p_workflow_id, p_agent_key, p_opt_in);
        end if;
      end $$;`);
    this.addSql(`create function "liya_iso"(t timestamptz) returns text language sql immutable as $$
      select to_char(t at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')
    $$;`);
    this.addSql(`create function "liya_error"(e jsonb) returns jsonb language sql immutable as $$
      select case when e is null then null else jsonb_build_object('code', coalesce(e->>'code', 'ERROR'), 'message', coalesce(e->>'message', '')) end
    $$;`);

    this.addSql(`alter table "event_subscriptions" add constraint "event_subscriptions_tenant_id_foreign" foreign key ("tenant_id") references "tenants" ("id") on delete cascade;`);

    this.addSql(`alter table "events" add constraint "events_tenant_id_foreign" foreign key ("tenant_id") references "tenants" ("id") on delete cascade;`);

    this.addSql(`alter table "event_deliveries" add constraint "event_deliveries_tenant_id_foreign" foreign key ("tenant_id") references "tenants" ("id") on delete cascade;`);
    this.addSql(`alter table "event_deliveries" add constraint "event_deliveries_event_id_foreign" foreign key ("event_id") references "events" ("id") on delete cascade;`);
    this.addSql(`alter table "event_deliveries" add constraint "event_deliveries_subscription_id_foreign" foreign key ("subscription_id") references "event_subscriptions" ("id") on delete cascade;`);

    this.addSql(`alter table "event_delivery_attempts" add constraint "event_delivery_attempts_tenant_id_foreign" foreign key ("tenant_id") references "tenants" ("id") on delete cascade;`);
    this.addSql(`alter table "event_delivery_attempts" add constraint "event_delivery_attempts_delivery_id_foreign" foreign key ("delivery_id") references "event_deliveries" ("id") on delete cascade;`);
  }

  override down(): void | Promise<void> {
    for (const fn of ['liya_emit(uuid, text, jsonb, text, text, text, boolean)', 'liya_record_event(uuid, text, jsonb, text, text, text, boolean)',
      'liya_event_wanted(uuid, text, text, text, text, boolean)', 'liya_iso(timestamptz)', 'liya_error(jsonb)']) {
      this.addSql(`drop function if exists ${fn};`);
    }
    this.addSql(`drop table if exists "event_delivery_attempts" cascade;`);
    this.addSql(`drop table if exists "event_deliveries" cascade;`);
    this.addSql(`drop table if exists "events" cascade;`);
    this.addSql(`drop table if exists "event_subscriptions" cascade;`);
  }

}
