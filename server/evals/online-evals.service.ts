// Online evaluation's settings: sampling rules (which production runs are scored, by which suite),
// monitors over their live windows, and the tenant's own monthly cap on online judging. The
// sampling itself is server/runs/online-sampling.ts; the intake online-intake.ts; the judgement
// monitors.ts.
import type { EntityManager } from '../../db/orm.js';
import { iso, isoRequired, isUuid, startOfNextMonth } from '../common/schemas.js';
import type { AppDeps } from '../deps.js';
import { AppError, invalidInput, notFound } from '../errors.js';
import { forgetRuleSamples } from '../runs/online-sample-records.js';
import { forgetSamplingRules } from '../runs/online-sampling.js';
import { allowancesForPlan, type EvalAllowances } from '../tenants/plan-limits.js';
import { getTenantEntity, updateTenantFields } from '../tenants/tenant-records.js';
import type { TenantScope } from '../tenants/tenant-scope.js';
import { judgeSpendThisMonth, onlineJudgeSpendThisMonth } from './eval-limits.js';
import { toRunDto } from './eval-runs.service.js';
import type { CreateMonitorInput, CreateOnlineRuleInput, MonitorDto, OnlineRuleDto, OnlineTarget, UpdateMonitorInput, UpdateOnlineRuleInput } from './online-evals.schemas.js';
import { listRuleWindows } from './store/eval-runs.js';
import {
  countTenantMonitors, deleteMonitor as deleteMonitorRow, findTenantMonitor, insertMonitor, listMonitorChanges, listTenantMonitors, updateMonitor as updateMonitorRow, type MonitorRow,
} from './store/monitors.js';
import {
  countTenantOnlineRules, deleteOnlineRule as deleteRuleRow, findTenantOnlineRule, insertOnlineRule, listTenantOnlineRules, updateOnlineRule as updateRuleRow, type OnlineRuleRow,
} from './store/online-rules.js';
import { findSuite } from './suites.service.js';

const idOf = (ref: unknown): string => (typeof ref === 'string' ? ref : (ref as { id: string }).id);

function evalsOf(plan: string): EvalAllowances {
  const evals = allowancesForPlan(plan).evals;
  if (evals === null) throw new AppError('EVALS_NOT_AVAILABLE', `Evaluations are not available on the ${plan} plan`, { plan });
  return evals;
}

function targetOf(r: OnlineRuleRow): OnlineTarget {
  if (r.targetKind === 'agent') return { kind: 'agent', agent_key: r.agentKey ?? '' };
  if (r.targetKind === 'workflow_step') return { kind: 'workflow_step', workflow_key: r.workflowKey ?? '', step_id: r.stepId ?? '' };
  return { kind: 'intent', domain_key: r.domainKey ?? '', intent_key: r.intentKey ?? '' };
}

export function toRuleDto(r: OnlineRuleRow): OnlineRuleDto {
  return {
    id: r.id, name: r.name, suite_id: idOf(r.suite), target: targetOf(r), sample_rate: Number(r.sampleRate), filter: r.filter ?? null,
    expected_output: r.expectedOutput ?? null, daily_cap: r.dailyCap, enabled: r.enabled, created_at: isoRequired(r.createdAt), updated_at: isoRequired(r.updatedAt),
  };
}

const targetColumns = (t: OnlineTarget) => ({
  targetKind: t.kind,
  domainKey: t.kind === 'intent' ? t.domain_key : null,
  intentKey: t.kind === 'intent' ? t.intent_key : null,
  agentKey: t.kind === 'agent' ? t.agent_key : null,
  workflowKey: t.kind === 'workflow_step' ? t.workflow_key : null,
  stepId: t.kind === 'workflow_step' ? t.step_id : null,
});

const nameTaken = (what: 'ONLINE_RULE_NAME_TAKEN' | 'MONITOR_NAME_TAKEN', name: string) =>
  new AppError(what, `${what === 'ONLINE_RULE_NAME_TAKEN' ? 'An online rule' : 'A monitor'} named "${name}" exists`, { name });

/** A suite of the tenant, or 400 naming suite_id. */
async function suiteFor(em: EntityManager, tenantId: string, suiteId: string) {
  try {
    return await findSuite(em, tenantId, suiteId);
  } catch {
    throw invalidInput('suite_id is not one of your suites', [{ path: 'suite_id', message: `no suite ${suiteId}` }]);
  }
}

export async function createOnlineRule(em: EntityManager, scope: TenantScope, body: CreateOnlineRuleInput): Promise<OnlineRuleDto> {
  const evals = evalsOf(scope.plan);
  const suite = await suiteFor(em, scope.tenantId, body.suite_id);
  if ((await countTenantOnlineRules(em, scope.tenantId)) >= evals.online_rules) {
    throw new AppError('ONLINE_RULE_LIMIT', `The ${scope.plan} plan allows ${evals.online_rules} online rules`, { limit: evals.online_rules, plan: scope.plan });
  }
  const target: OnlineTarget = body.target ?? { kind: 'intent', domain_key: suite.domainKey, intent_key: suite.intentKey };
  const rule = await insertOnlineRule(em, scope.tenantId, suite.id, {
    name: body.name, ...targetColumns(target), sampleRate: body.sample_rate, filter: body.filter ?? null, expectedOutput: body.expected_output ?? null,
    dailyCap: body.daily_cap, enabled: body.enabled,
  } as never);
  if (!rule) throw nameTaken('ONLINE_RULE_NAME_TAKEN', body.name);
  forgetSamplingRules(scope.tenantId);
  return toRuleDto(rule);
}

export async function findOnlineRule(em: EntityManager, tenantId: string, id: string): Promise<OnlineRuleRow> {
  const rule = isUuid(id) ? await findTenantOnlineRule(em, tenantId, id) : null;
  if (!rule) throw notFound('Online rule');
  return rule;
}

export async function listOnlineRules(em: EntityManager, tenantId: string): Promise<OnlineRuleDto[]> {
  return (await listTenantOnlineRules(em, tenantId)).map(toRuleDto);
}

export async function updateOnlineRule(em: EntityManager, tenantId: string, body: UpdateOnlineRuleInput): Promise<OnlineRuleDto> {
  const rule = await findOnlineRule(em, tenantId, body.ruleId);
  const suite = body.suite_id === undefined ? undefined : (await suiteFor(em, tenantId, body.suite_id)).id;
  const updated = await updateRuleRow(em, rule, {
      ...(body.name !== undefined ? { name: body.name } : {}),
      ...(suite ? { suite } : {}),
      ...(body.sample_rate !== undefined ? { sampleRate: body.sample_rate } : {}),
      ...(body.filter !== undefined ? { filter: body.filter } : {}),
      ...(body.expected_output !== undefined ? { expectedOutput: body.expected_output } : {}),
      ...(body.daily_cap !== undefined ? { dailyCap: body.daily_cap } : {}),
      ...(body.enabled !== undefined ? { enabled: body.enabled } : {}),
  });
  if (!updated) throw nameTaken('ONLINE_RULE_NAME_TAKEN', body.name ?? rule.name);
  forgetSamplingRules(tenantId);
  return toRuleDto(rule);
}

/** Deletes the rule with its queued samples and monitors; its windows stay (as runs, online_rule_id null). */
export async function deleteOnlineRule(em: EntityManager, tenantId: string, id: string): Promise<void> {
  const rule = await findOnlineRule(em, tenantId, id);
  // The rule and its queued samples go together (the queue holds no foreign key to cascade).
  await em.transactional(async (tx) => {
    await forgetRuleSamples(tx, tenantId, rule.id);
    await deleteRuleRow(tx, rule);
  });
  forgetSamplingRules(tenantId);
}

/** The rule's live windows (an eval run per UTC day), newest first. */
export async function listWindows(em: EntityManager, tenantId: string, id: string) {
  const rule = await findOnlineRule(em, tenantId, id);
  return (await listRuleWindows(em, tenantId, rule.id, 90)).map((r) => toRunDto(r, tenantId));
}

// ---- Monitors -----------------------------------------------------------------------------------

export function toMonitorDto(m: MonitorRow & { windowSamples?: number | null }): MonitorDto {
  return {
    id: m.id, name: m.name, rule_id: idOf(m.rule), metric: m.metric, dimension: m.dimension ?? null, direction: m.direction, threshold: Number(m.threshold),
    window_minutes: m.windowMinutes, window_samples: m.windowSamples ?? null, min_samples: m.minSamples, confidence: Number(m.confidence), enabled: m.enabled,
    state: m.state, last_value: m.lastValue === null || m.lastValue === undefined ? null : Number(m.lastValue), last_bound: m.lastBound === null || m.lastBound === undefined ? null : Number(m.lastBound), last_samples: m.lastN, evaluated_at: iso(m.evaluatedAt),
    changed_at: iso(m.changedAt), created_at: isoRequired(m.createdAt),
  };
}

const RISING_METRICS = new Set(['check_failure_rate', 'cost_usd', 'latency_ms']);

export async function createMonitor(em: EntityManager, scope: TenantScope, body: CreateMonitorInput): Promise<MonitorDto> {
  const evals = evalsOf(scope.plan);
  let rule: OnlineRuleRow;
  try {
    rule = await findOnlineRule(em, scope.tenantId, body.rule_id);
  } catch {
    throw invalidInput('rule_id is not one of your online rules', [{ path: 'rule_id', message: `no online rule ${body.rule_id}` }]);
  }
  if (body.dimension && body.metric !== 'mean_score') throw invalidInput('dimension applies to mean_score only', [{ path: 'dimension', message: 'mean_score only' }]);
  if ((await countTenantMonitors(em, scope.tenantId)) >= evals.monitors) {
    throw new AppError('MONITOR_LIMIT', `The ${scope.plan} plan allows ${evals.monitors} monitors`, { limit: evals.monitors, plan: scope.plan });
  }
  const monitor = await insertMonitor(em, scope.tenantId, rule.id, {
      name: body.name, metric: body.metric, dimension: body.dimension ?? null, direction: body.direction ?? (RISING_METRICS.has(body.metric) ? 'above' : 'below'),
      threshold: body.threshold, windowMinutes: body.window_minutes, windowSamples: body.window_samples ?? null, minSamples: body.min_samples,
      confidence: body.confidence, enabled: body.enabled,
  } as never);
  if (!monitor) throw nameTaken('MONITOR_NAME_TAKEN', body.name);
  return toMonitorDto(monitor);
}

export async function findMonitor(em: EntityManager, tenantId: string, id: string): Promise<MonitorRow> {
  const monitor = isUuid(id) ? await findTenantMonitor(em, tenantId, id) : null;
  if (!monitor) throw notFound('Monitor');
  return monitor;
}

export async function listMonitors(em: EntityManager, tenantId: string, ruleId: string | undefined): Promise<MonitorDto[]> {
  if (ruleId !== undefined && !isUuid(ruleId)) return [];
  return (await listTenantMonitors(em, tenantId, ruleId)).map(toMonitorDto);
}

export async function updateMonitor(em: EntityManager, tenantId: string, body: UpdateMonitorInput): Promise<MonitorDto> {
  const monitor = await findMonitor(em, tenantId, body.monitorId);
  const updated = await updateMonitorRow(em, monitor, {
      ...(body.name !== undefined ? { name: body.name } : {}),
      ...(body.threshold !== undefined ? { threshold: body.threshold } : {}),
      ...(body.window_minutes !== undefined ? { windowMinutes: body.window_minutes } : {}),
      ...(body.window_samples !== undefined ? { windowSamples: body.window_samples } : {}),
      ...(body.min_samples !== undefined ? { minSamples: body.min_samples } : {}),
      ...(body.confidence !== undefined ? { confidence: body.confidence } : {}),
      ...(body.enabled !== undefined ? { enabled: body.enabled } : {}),
  });
  if (!updated) throw nameTaken('MONITOR_NAME_TAKEN', body.name ?? monitor.name);
  return toMonitorDto(monitor);
}

export async function deleteMonitor(em: EntityManager, tenantId: string, id: string): Promise<void> {
  await deleteMonitorRow(em, await findMonitor(em, tenantId, id));
}

/** The monitor's state changes, newest first (the last 200). */
export async function monitorHistory(em: EntityManager, tenantId: string, id: string) {
  const monitor = await findMonitor(em, tenantId, id);
  const changes = await listMonitorChanges(em, monitor.id, 200);
  return changes.map((c) => ({ state: c.state as 'ok' | 'firing', value: c.value, bound: c.bound, samples: c.n, threshold: Number(c.threshold), at: isoRequired(c.at) }));
}

// ---- The online judge budget --------------------------------------------------------------------

export async function readOnlineBudget(em: EntityManager, deps: AppDeps, scope: TenantScope) {
  const evals = evalsOf(scope.plan);
  const tenant = await getTenantEntity(em, scope.tenantId);
  const own = tenant.onlineJudgeBudgetUsd === null || tenant.onlineJudgeBudgetUsd === undefined ? null : Number(tenant.onlineJudgeBudgetUsd);
  const [spent, planSpent] = await Promise.all([onlineJudgeSpendThisMonth(deps.sql, scope.tenantId), judgeSpendThisMonth(deps.sql, scope.tenantId)]);
  return {
    monthly_usd: own ?? evals.online_judge_budget_usd, own_monthly_usd: own, plan_default_usd: evals.online_judge_budget_usd,
    spent_usd: Number(spent.toFixed(6)), plan_judge_budget_usd: evals.judge_budget_usd, plan_judge_spent_usd: Number(planSpent.toFixed(6)),
    resets_at: startOfNextMonth().toISOString(),
  };
}

export async function setOnlineBudget(em: EntityManager, deps: AppDeps, scope: TenantScope, usd: number | null) {
  evalsOf(scope.plan);
  const tenant = await getTenantEntity(em, scope.tenantId);
  await updateTenantFields(em, tenant, { onlineJudgeBudgetUsd: usd });
  return readOnlineBudget(em, deps, scope);
}
