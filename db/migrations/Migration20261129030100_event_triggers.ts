import { Migration } from '@mikro-orm/migrations';

// The events of the catalogue, fired by the changes themselves: a row trigger on each table whose
// change is an event calls liya_emit (Migration20261129030000_events), so the event is recorded in
// the transaction of the change by every code path that makes it (a run finished by a request, a
// job, a recovery or a cancel alike), and a rolled-back change leaves no event. Payloads are
// version 1 of the types in server/events/event-catalogue.ts, which documents them; a test checks
// each one against its schema. Nothing here reads more than the row unless a subscription wants it.
// Two events are recorded by the statements themselves instead, because their rows are the hottest
// of all and a trigger there costs every run: quota crossings (usage_counters, see
// liya_quota_crossings below) and intent.run.completed (server/intents/store/run-record.ts).
export class Migration20261129030100_event_triggers extends Migration {

  override name = 'Migration20261129030100_event_triggers';

  override up(): void | Promise<void> {
    this.addSql(`create function "liya_workflow_run_events"() returns trigger language plpgsql as $$
      declare
        v_type text;
        v_wf text := new.workflow_id::text;
        v_data jsonb;
      begin
        if not exists (select 1 from event_subscriptions s where s.tenant_id = new.tenant_id) then return null; end if;
        v_data := jsonb_build_object('run_id', new.id, 'workflow_id', new.workflow_id,
          'workflow_key', (select w.workflow_key from workflows w where w.id = new.workflow_id),
          'version', new.version, 'scope', new.scope, 'status', new.status, 'triggered_by', new.triggered_by,
          'error', liya_error(new.error), 'started_at', liya_iso(new.started_at), 'completed_at', liya_iso(new.completed_at));
        if tg_op = 'INSERT' then
          perform liya_emit(new.tenant_id, 'workflow.run.started', v_data, null, v_wf, null);
        elsif old.status = new.status then
          return null;
        end if;
        v_type := case
          when new.status in ('completed', 'rejected') then 'workflow.run.completed'
          when new.status = 'failed' then 'workflow.run.failed'
          when new.status = 'cancelled' then 'workflow.run.cancelled'
          when new.status = 'waiting' and new.wait_kind = 'callback' then 'workflow.run.waiting'
        end;
        if v_type = 'workflow.run.waiting' then
          v_data := v_data || jsonb_build_object('step_id', new.next_step_id, 'wait', 'callback', 'callback_seq', new.callback_seq,
            'timeout_at', liya_iso(new.resume_at));
        end if;
        if v_type is not null then perform liya_emit(new.tenant_id, v_type, v_data, null, v_wf, null); end if;
        return null;
      end $$;`);
    this.addSql(`create trigger "workflow_runs_events" after insert on "workflow_runs" for each row execute function "liya_workflow_run_events"();`);
    // Only a change of status calls the function (an update that leaves it as it was calls nothing).
    this.addSql(`create trigger "workflow_runs_events_update" after update of "status" on "workflow_runs"
      for each row when (old.status is distinct from new.status) execute function "liya_workflow_run_events"();`);

    this.addSql(`create function "liya_approval_events"() returns trigger language plpgsql as $$
      declare v_data jsonb;
      begin
        if not exists (select 1 from event_subscriptions s where s.tenant_id = new.tenant_id) then return null; end if;
        v_data := jsonb_build_object('approval_id', new.id, 'run_id', new.run_id, 'workflow_id', new.workflow_id,
          'workflow_key', (select w.workflow_key from workflows w where w.id = new.workflow_id),
          'step_id', new.step_id, 'message', new.message, 'expires_at', liya_iso(new.expires_at), 'created_at', liya_iso(new.created_at));
        if tg_op = 'INSERT' then
          perform liya_emit(new.tenant_id, 'approval.requested', v_data, null, new.workflow_id::text, null);
        elsif old.status = 'pending' and new.status <> 'pending' then
          perform liya_emit(new.tenant_id, 'approval.decided', v_data || jsonb_build_object('decision', new.status, 'decided_by', new.decided_by,
            'comment', new.comment, 'decided_at', liya_iso(coalesce(new.decided_at, now()))), null, new.workflow_id::text, null);
        end if;
        return null;
      end $$;`);
    this.addSql(`create trigger "workflow_approvals_events" after insert on "workflow_approvals" for each row execute function "liya_approval_events"();`);
    // Only a change of status calls the function (an update that leaves it as it was calls nothing).
    this.addSql(`create trigger "workflow_approvals_events_update" after update of "status" on "workflow_approvals"
      for each row when (old.status is distinct from new.status) execute function "liya_approval_events"();`);

    this.addSql(`create function "liya_agent_run_events"() returns trigger language plpgsql as $$
      declare
        v_key text;
        v_data jsonb;
        v_type text;
      begin
        if not exists (select 1 from event_subscriptions s where s.tenant_id = new.tenant_id) then return null; end if;
        v_key := (select a.agent_key from agents a where a.id = new.agent_id);
        v_data := jsonb_build_object('run_id', new.id, 'agent_key', v_key, 'session_id', new.session_id, 'status', new.status,
          'model', new.model, 'steps', new.steps, 'total_tokens', new.total_tokens, 'total_cost_usd', new.total_cost::float8,
          'error', liya_error(new.error), 'started_at', liya_iso(new.started_at), 'completed_at', liya_iso(new.completed_at));
        if tg_op = 'INSERT' then
          perform liya_emit(new.tenant_id, 'agent.run.started', v_data, null, null, v_key);
        elsif old.status = new.status then
          return null;
        end if;
        v_type := case
          when new.status in ('completed', 'max_steps_reached', 'guardrail_blocked', 'needs_input') then 'agent.run.completed'
          when new.status in ('failed', 'cancelled', 'budget_exhausted') then 'agent.run.failed'
        end;
        if v_type is not null then perform liya_emit(new.tenant_id, v_type, v_data, null, null, v_key); end if;
        if new.status = 'budget_exhausted' then
          perform liya_emit(new.tenant_id, 'budget.exhausted', jsonb_build_object('run_kind', 'agent', 'run_id', new.id, 'agent_key', v_key,
            'max_cost_usd', new.max_cost_usd::float8, 'cost_usd', new.total_cost::float8, 'error', liya_error(new.error)), null, null, v_key);
        end if;
        return null;
      end $$;`);
    this.addSql(`create trigger "agent_runs_events" after insert on "agent_runs" for each row execute function "liya_agent_run_events"();`);
    // Only a change of status calls the function (an update that leaves it as it was calls nothing).
    this.addSql(`create trigger "agent_runs_events_update" after update of "status" on "agent_runs"
      for each row when (old.status is distinct from new.status) execute function "liya_agent_run_events"();`);

    this.addSql(`create function "liya_eval_run_events"() returns trigger language plpgsql as $$
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
    this.addSql(`create trigger "eval_runs_events" after insert on "eval_runs" for each row execute function "liya_eval_run_events"();`);
    // Only a change of status calls the function (an update that leaves it as it was calls nothing).
    this.addSql(`create trigger "eval_runs_events_update" after update of "status" on "eval_runs"
      for each row when (old.status is distinct from new.status) execute function "liya_eval_run_events"();`);

    this.addSql(`create function "liya_deployment_events"() returns trigger language plpgsql as $$
      declare
        v_data jsonb;
        v_old text := case when tg_op = 'UPDATE' then old.status end;
      begin
        if v_old = new.status or new.status not in ('deployed', 'gate_failed', 'failed') then return null; end if;
        if not exists (select 1 from event_subscriptions s where s.tenant_id = new.tenant_id) then return null; end if;
        v_data := jsonb_build_object('deployment_id', new.id, 'status', new.status, 'prune', new.prune, 'gate', new.gate,
          'min_pass_rate', new.min_pass_rate, 'error', liya_error(new.error), 'created_by', new.created_by,
          'created_at', liya_iso(new.created_at), 'published_at', liya_iso(new.published_at));
        if jsonb_array_length(new.gate) > 0 and new.status in ('deployed', 'gate_failed') then
          perform liya_emit(new.tenant_id, case when new.status = 'deployed' then 'eval.gate.passed' else 'eval.gate.failed' end, v_data, null, null, null);
        end if;
        perform liya_emit(new.tenant_id, case when new.status = 'deployed' then 'deployment.published' else 'deployment.failed' end, v_data, null, null, null);
        return null;
      end $$;`);
    this.addSql(`create trigger "deployments_events" after insert on "deployments" for each row execute function "liya_deployment_events"();`);
    // Only a change of status calls the function (an update that leaves it as it was calls nothing).
    this.addSql(`create trigger "deployments_events_update" after update of "status" on "deployments"
      for each row when (old.status is distinct from new.status) execute function "liya_deployment_events"();`);

    this.addSql(`create function "liya_ingestion_events"() returns trigger language plpgsql as $$
      begin
        if tg_op = 'UPDATE' and old.status = new.status then return null; end if;
        if new.status not in ('completed', 'failed') then return null; end if;
        if not exists (select 1 from event_subscriptions s where s.tenant_id = new.tenant_id) then return null; end if;
        perform liya_emit(new.tenant_id, 'ingestion.' || new.status, jsonb_build_object('job_id', new.id, 'document_id', new.document_id,
          'name', new.name, 'source_type', new.source_type, 'status', new.status, 'result', new.result,
          'error', case when new.error_message is not null then jsonb_build_object('code', 'INGESTION_FAILED', 'message', new.error_message) end,
          'created_at', liya_iso(new.created_at), 'completed_at', liya_iso(new.completed_at)), null, null, null);
        return null;
      end $$;`);
    this.addSql(`create trigger "ingestion_jobs_events" after insert on "ingestion_jobs" for each row execute function "liya_ingestion_events"();`);
    // Only a change of status calls the function (an update that leaves it as it was calls nothing).
    this.addSql(`create trigger "ingestion_jobs_events_update" after update of "status" on "ingestion_jobs"
      for each row when (old.status is distinct from new.status) execute function "liya_ingestion_events"();`);

    this.addSql(`create function "liya_api_key_events"() returns trigger language plpgsql as $$
      declare v_data jsonb;
      begin
        if tg_op = 'UPDATE' and (old.revoked_at is not null or new.revoked_at is null) then return null; end if;
        if not exists (select 1 from event_subscriptions s where s.tenant_id = new.tenant_id) then return null; end if;
        v_data := jsonb_build_object('key_id', new.id, 'name', new.name, 'key_preview', new.key_preview,
          'environment', (select e.name from environments e where e.id = new.environment_id), 'permissions', new.permissions,
          'expires_at', liya_iso(new.expires_at), 'created_by', new.created_by, 'created_at', liya_iso(new.created_at),
          'revoked_at', liya_iso(new.revoked_at));
        perform liya_emit(new.tenant_id, case when tg_op = 'INSERT' then 'key.created' else 'key.revoked' end, v_data, null, null, null);
        return null;
      end $$;`);
    this.addSql(`create trigger "api_keys_events" after insert on "api_keys" for each row execute function "liya_api_key_events"();`);
    // Only a change of revoked_at calls the function (an update that leaves it as it was calls nothing).
    this.addSql(`create trigger "api_keys_events_update" after update of "revoked_at" on "api_keys"
      for each row when (old.revoked_at is distinct from new.revoked_at) execute function "liya_api_key_events"();`);

    // A monthly quota crossing 80% and 100%: recorded by the statements that move the counter
    // (server/usage/store/usage-events.ts, quotaCrossedSql), which call this only when their own
    // arithmetic says a total moved past a mark. No trigger: usage_counters is the hottest row of
    // all, and any trigger on it lengthens the time every run of the tenant holds its lock
    // (measured: an exists-only trigger halved the throughput of 16 concurrent upserts). Answers
    // the events recorded.
    this.addSql(`create function "liya_quota_crossings"(p_tenant uuid, p_month text, p_kind text, p_quota bigint, p_before bigint, p_after bigint)
      returns int language plpgsql as $$
      declare v_recorded int := 0;
      begin
        if p_quota is null or p_quota <= 0 then return 0; end if;
        if p_before < ceil(p_quota * 0.8) and p_after >= ceil(p_quota * 0.8) and p_after < p_quota then
          perform liya_emit(p_tenant, 'quota.warning', jsonb_build_object('quota', p_kind, 'month', p_month, 'limit', p_quota, 'used', p_after, 'percent', 80), null, null, null);
          v_recorded := v_recorded + 1;
        end if;
        if p_before < p_quota and p_after >= p_quota then
          perform liya_emit(p_tenant, 'quota.exhausted', jsonb_build_object('quota', p_kind, 'month', p_month, 'limit', p_quota, 'used', p_after, 'percent', 100), null, null, null);
          v_recorded := v_recorded + 1;
        end if;
        return v_recorded;
      end $$;`);

    // A model provider's breaker on the platform's credential opened (a row) or closed (its delete):
    // every tenant whose subscription wants it hears of it, since every tenant's calls go there. A
    // tenant's own credential is named by a digest only, so its breaker is no event.
    this.addSql(`create function "liya_breaker_events"() returns trigger language plpgsql as $$
      declare
        v_type text := case when tg_op = 'INSERT' then 'provider.breaker.opened' else 'provider.breaker.closed' end;
        v_provider text;
        v_credential text;
        v_until timestamptz;
        v_tenant uuid;
      begin
        if tg_op = 'INSERT' then
          v_provider := new.provider; v_credential := new.credential; v_until := new.open_until;
        else
          v_provider := old.provider; v_credential := old.credential; v_until := null;
        end if;
        if v_credential <> 'platform' then return null; end if;
        -- Rows a day past their end are pruned (server/llm/store/provider-breakers.ts), not closed by a probe.
        if tg_op = 'DELETE' and old.open_until < now() - interval '1 day' then return null; end if;
        for v_tenant in
          select distinct s.tenant_id from event_subscriptions s where s.enabled and (s.event_types is null or jsonb_exists(s.event_types, v_type))
        loop
          perform liya_emit(v_tenant, v_type, jsonb_build_object('provider', v_provider, 'credential', 'platform', 'open_until', liya_iso(v_until)), null, null, null);
        end loop;
        return null;
      end $$;`);
    this.addSql(`create trigger "provider_breakers_events" after insert or delete on "provider_breakers"
      for each row execute function "liya_breaker_events"();`);

  }

  override down(): void | Promise<void> {
    for (const [table, fn] of [
      ['workflow_runs', 'liya_workflow_run_events'], ['workflow_approvals', 'liya_approval_events'], ['agent_runs', 'liya_agent_run_events'],
      ['eval_runs', 'liya_eval_run_events'], ['deployments', 'liya_deployment_events'], ['ingestion_jobs', 'liya_ingestion_events'],
      ['api_keys', 'liya_api_key_events'], ['provider_breakers', 'liya_breaker_events'],
    ]) {
      this.addSql(`drop trigger if exists "${table}_events" on "${table}";`);
      this.addSql(`drop trigger if exists "${table}_events_update" on "${table}";`);
      this.addSql(`drop function if exists "${fn}"();`);
    }
    this.addSql(`drop function if exists liya_quota_crossings(uuid, text, text, bigint, bigint, bigint);`);
  }

}
