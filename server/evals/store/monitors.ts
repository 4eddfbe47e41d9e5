// eval_monitors and eval_monitor_changes: online evaluation's monitors, their last judgement and the
// history of their state changes (each change records its event, eval.monitor.fired or .resolved,
// in the same statement).
import { sql } from 'kysely';
import { kyselyOf } from '../../../db/kysely.js';
import type { EntityManager } from '../../../db/orm.js';
import { flushUnlessDuplicate } from '../../../db/unique-violation.js';
import { build, runBuilt } from '../../../db/statements.js';
import { EvalMonitor, type IEvalMonitor } from '../../../db/entities/online-eval.js';
import type { SqlRunner } from './eval-runs.js';


export type { IEvalMonitor as MonitorRow } from '../../../db/entities/online-eval.js';

export type MonitorFields = Pick<IEvalMonitor, 'name' | 'metric' | 'dimension' | 'direction' | 'threshold' | 'windowMinutes' | 'minSamples' | 'confidence' | 'enabled'> & {
  windowSamples: number | null;
};

export async function insertMonitor(em: EntityManager, tenantId: string, ruleId: string, fields: MonitorFields): Promise<IEvalMonitor | null> {
  const monitor = em.create(EvalMonitor, { tenant: tenantId, rule: ruleId, ...fields, state: 'ok', lastN: 0 } as never);
  return (await flushUnlessDuplicate(em)) ? monitor : null;
}

export async function findTenantMonitor(em: EntityManager, tenantId: string, id: string): Promise<IEvalMonitor | null> {
  return em.findOne(EvalMonitor, { id, tenant: tenantId });
}

export async function listTenantMonitors(em: EntityManager, tenantId: string, ruleId: string | undefined): Promise<IEvalMonitor[]> {
  return em.find(EvalMonitor, { tenant: tenantId, ...(ruleId ? { rule: ruleId } : {}) }, { orderBy: { createdAt: 'desc', id: 'desc' }, limit: 500 });
}

export async function countTenantMonitors(em: EntityManager, tenantId: string): Promise<number> {
  return em.count(EvalMonitor, { tenant: tenantId });
}

export async function updateMonitor(em: EntityManager, monitor: IEvalMonitor, fields: Partial<MonitorFields>): Promise<IEvalMonitor | null> {
  em.assign(monitor, fields as never);
  return (await flushUnlessDuplicate(em)) ? monitor : null;
}

export async function deleteMonitor(em: EntityManager, monitor: IEvalMonitor): Promise<void> {
  await em.remove(monitor).flush();
}

export interface MonitorChangeRow {
  id: string;
  state: string;
  value: number | null;
  bound: number | null;
  n: number;
  threshold: number;
  at: Date;
}

/** The monitor's state changes, newest first. */
export async function listMonitorChanges(em: EntityManager, monitorId: string, limit: number): Promise<MonitorChangeRow[]> {
  return kyselyOf(em)
    .selectFrom('eval_monitor_changes')
    .select([sql<string>`id::text`.as('id'), 'state', 'value', 'bound', 'n', 'threshold', 'at'])
    .where('monitor_id', '=', monitorId)
    .orderBy('at', 'desc')
    .orderBy('id', 'desc')
    .limit(limit)
    .execute() as Promise<MonitorChangeRow[]>;
}

/** An enabled monitor of a rule, as its judgement needs it. */
export interface RuleMonitor {
  id: string;
  tenant_id: string;
  name: string;
  metric: string;
  dimension: string | null;
  direction: 'below' | 'above';
  threshold: number;
  window_minutes: number;
  window_samples: number | null;
  min_samples: number;
  confidence: number;
  state: 'ok' | 'firing';
}

export async function listRuleMonitors(sqlPool: SqlRunner, ruleId: string): Promise<RuleMonitor[]> {
  return (await runBuilt(
    sqlPool.query,
    build
      .selectFrom('eval_monitors')
      .select([sql<string>`id::text`.as('id'), sql<string>`tenant_id::text`.as('tenant_id'), 'name', 'metric', 'dimension', 'direction', 'threshold', 'window_minutes',
        'window_samples', 'min_samples', 'confidence', 'state'])
      .where('rule_id', '=', ruleId)
      .where('enabled', '=', true),
  )) as RuleMonitor[];
}

/** A scored (or errored) case of the rule's windows, newest first: what every metric is read from. */
export interface WindowValueRow {
  status: string;
  score: number | null;
  dimension_scores: Record<string, number> | null;
  passed: boolean | null;
  check_failed: boolean | null;
  source_cost_usd: string | null;
  source_latency_ms: number | null;
}

/** The rule's cases done in the last `minutes`, newest first, `limit` at most. */
export async function listWindowValues(sqlPool: SqlRunner, ruleId: string, minutes: number, limit: number): Promise<WindowValueRow[]> {
  // Raw(other): the windows of the rule that can hold cases of the period (by day), then their cases by completion time.
  return sqlPool.query<WindowValueRow>(
    `select x.status, x.score, x.dimension_scores, x.passed, (x."check" ->> 'passed')::boolean = false as check_failed, x.source_cost_usd::text, x.source_latency_ms
       from eval_runs r join eval_results x on x.run_id = r.id
      where r.online_rule_id = $1 and r.window_day >= (now() - make_interval(mins => $2::int))::date
        and x.status in ('scored', 'errored') and x.completed_at >= now() - make_interval(mins => $2::int)
      order by x.completed_at desc
      limit $3`,
    [ruleId, minutes, limit],
  );
}

// Raw(other): the judgement, and on a change its history row and its event, in one statement that
// applies only if the state is still the one judged from (two processes judging at once change it once).
const JUDGED_SQL = `
with judged as (
  update eval_monitors set state = $3, last_value = $4, last_bound = $5, last_n = $6, evaluated_at = now(),
         changed_at = case when $3 <> $2 then now() else changed_at end
   where id = $1 and state = $2
  returning id, tenant_id, rule_id, name, metric, threshold, direction, window_minutes),
change as (
  insert into eval_monitor_changes (id, tenant_id, monitor_id, state, value, bound, n, threshold, at)
  select gen_random_uuid(), j.tenant_id, j.id, $3, $4, $5, $6, j.threshold, now() from judged j where $3 <> $2
  returning 1),
event as (
  select liya_emit(j.tenant_id, case when $3 = 'firing' then 'eval.monitor.fired' else 'eval.monitor.resolved' end,
         jsonb_build_object('monitor_id', j.id::text, 'name', j.name, 'rule_id', j.rule_id::text, 'metric', j.metric, 'direction', j.direction,
           'threshold', j.threshold, 'value', $4::float8, 'bound', $5::float8, 'samples', $6::int, 'window_minutes', j.window_minutes, 'at', liya_iso(now())),
         null, null, null) as emitted
    from judged j where $3 <> $2)
select (select count(*) from judged)::int as judged, (select count(*) from change)::int as changed, (select count(*) from event)::int as events`;

/** Stores a judgement; answers whether the state changed here (false: unchanged, or another process changed it first). */
export async function recordMonitorJudgement(
  sqlPool: SqlRunner, v: { id: string; previous: string; state: string; value: number | null; bound: number | null; n: number },
): Promise<boolean> {
  const [row] = await sqlPool.query<{ judged: number; changed: number }>(JUDGED_SQL, [v.id, v.previous, v.state, v.value, v.bound, v.n]);
  return row.judged > 0 && row.changed > 0;
}
