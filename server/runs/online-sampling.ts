// Which production runs online evaluation scores. A run asks `pickOnlineRules` for the rules of its
// target that pick it (each rule's rate, then its metadata filter) and, when any does, writes its
// samples inside its own final statement (store/online-samples.ts); it never waits for scoring.
// The tenant's rules are read once per SAMPLING_RULES_TTL_MS per process (a write in this process
// drops its copy at once), so a run pays a Map lookup, not a query. The run does nothing more: the
// job runners look for queued samples every second and queue their tenants' intake
// (server/evals/online-intake.ts), so no statement is added to the API process for them.
import type { SqlPool } from '../../db/sql-pool.js';
import { listEnabledSamplingRules, type SamplingRuleRow } from './store/online-samples.js';

/** How long a process keeps a tenant's rules before reading them again. */
export const SAMPLING_RULES_TTL_MS = 5_000;
/** Tenants whose rules a process keeps at most (the rest are read again when needed). */
const MAX_CACHED_TENANTS = 10_000;

export type SamplingTarget =
  | { kind: 'intent'; domain: string; intent: string }
  | { kind: 'agent'; agentKey: string }
  | { kind: 'workflow_step'; workflowKey: string; stepId: string };

const cache = new Map<string, { at: number; rules: SamplingRuleRow[] }>();

/** Forgets the tenant's rules in this process (a rule was created, changed or deleted). */
export function forgetSamplingRules(tenantId: string): void {
  cache.delete(tenantId);
}

async function rulesOf(sqlPool: SqlPool, tenantId: string): Promise<SamplingRuleRow[]> {
  const now = Date.now();
  const hit = cache.get(tenantId);
  if (hit && now - hit.at < SAMPLING_RULES_TTL_MS) return hit.rules;
  const rules = await listEnabledSamplingRules(sqlPool, tenantId);
  if (cache.size >= MAX_CACHED_TENANTS) cache.clear();
  cache.set(tenantId, { at: now, rules });
  return rules;
}

const matchesTarget = (rule: SamplingRuleRow, target: SamplingTarget) =>
  rule.target_kind === target.kind &&
  (target.kind === 'intent'
    ? rule.domain_key === target.domain && rule.intent_key === target.intent
    : target.kind === 'agent'
      ? rule.agent_key === target.agentKey
      : rule.workflow_key === target.workflowKey && rule.step_id === target.stepId);

/** A filter entry matches when the run's metadata has the value, or one of the values a list gives. */
function matchesFilter(filter: Record<string, unknown> | null, metadata: Record<string, unknown> | undefined): boolean {
  if (!filter) return true;
  for (const [key, wanted] of Object.entries(filter)) {
    const value = metadata?.[key];
    const options = Array.isArray(wanted) ? wanted : [wanted];
    if (!options.some((option) => option === value)) return false;
  }
  return true;
}

/**
 * The ids of the rules of `target` that pick this run: each draws its own chance at its rate,
 * then looks at the run's metadata. Empty (the common case) without a query once the tenant's rules
 * are known.
 */
export async function pickOnlineRules(
  sqlPool: SqlPool, tenantId: string, target: SamplingTarget, metadata: Record<string, unknown> | undefined, random: () => number = Math.random,
): Promise<string[]> {
  const rules = await rulesOf(sqlPool, tenantId);
  if (rules.length === 0) return [];
  const picked: string[] = [];
  for (const rule of rules) {
    if (matchesTarget(rule, target) && random() < rule.sample_rate && matchesFilter(rule.filter, metadata)) picked.push(rule.id);
  }
  return picked;
}
