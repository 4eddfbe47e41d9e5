// The online evaluation queue: production runs the sampling rules picked (server/runs/online-sampling.ts),
// written by the run's own statement (onlineSampleSql, a CTE), taken by the scoring job. The rules
// themselves are the evals feature's table; this store only reads the enabled ones of a target.
import { sql } from 'kysely';
import { kyselyOf } from '../../../db/kysely.js';
import type { EntityManager } from '../../../db/orm.js';
import { build, runBuilt } from '../../../db/statements.js';
import type { SqlPool } from '../../../db/sql-pool.js';

type SqlQuery = Pick<SqlPool, 'query'>;

export interface SamplingRuleRow {
  id: string;
  target_kind: string;
  domain_key: string | null;
  intent_key: string | null;
  agent_key: string | null;
  workflow_key: string | null;
  step_id: string | null;
  sample_rate: number;
  filter: Record<string, unknown> | null;
}

/** The tenant's enabled sampling rules, every target kind (a handful: the plan caps them). */
export async function listEnabledSamplingRules(sqlPool: SqlQuery, tenantId: string): Promise<SamplingRuleRow[]> {
  return (await runBuilt(sqlPool.query, enabledRulesOf(tenantId))) as SamplingRuleRow[];
}

function enabledRulesOf(tenantId: string) {
  return build
    .selectFrom('online_eval_rules')
    .select([sql<string>`id::text`.as('id'), 'target_kind', 'domain_key', 'intent_key', 'agent_key', 'workflow_key', 'step_id', 'sample_rate', 'filter'])
    .where('tenant_id', '=', tenantId)
    .where('enabled', '=', true);
}

/**
 * The CTE that queues a run's samples, one row per rule that picked it, inside the run's own
 * statement: `rules` is a uuid[] parameter, the others SQL expressions of that statement.
 */
export function onlineSampleSql(v: { tenant: string; rules: string; sourceKind: string; sourceId: string; input: string; output: string; latencyMs: string; costUsd: string }): string {
  return `online_sample as (
  insert into online_eval_samples (tenant_id, rule_id, source_kind, source_id, input, output, latency_ms, cost_usd, created_at)
  select ${v.tenant}, r.id, ${v.sourceKind}, ${v.sourceId}, ${v.input}, ${v.output}, ${v.latencyMs}, ${v.costUsd}, now()
    from unnest(${v.rules}::uuid[]) as r(id)
  returning 1
)`;
}

export interface TakenSample {
  id: string;
  rule_id: string;
  source_kind: string;
  source_id: string;
  input: Record<string, unknown>;
  output: unknown;
  latency_ms: number;
  cost_usd: string;
  created_at: Date;
}

/** Removes and answers up to `limit` of the tenant's queued samples, oldest first (by the rising id; inside the caller's transaction). */
export async function takeOnlineSamples(tx: SqlQuery, tenantId: string, limit: number): Promise<TakenSample[]> {
  // Raw(other): delete ... returning over a locked, skip-locked selection (no builder shape for it).
  return tx.query<TakenSample>(
    `delete from online_eval_samples where tenant_id = $1 and id in (
       select id from online_eval_samples where tenant_id = $1 order by id limit $2 for update skip locked)
     returning id::text, rule_id::text, source_kind, source_id, input, output, latency_ms, cost_usd::text, created_at`,
    [tenantId, limit],
  );
}

/** Tenants with samples queued since before `before` (the sweep for kicks a crash lost). */
export async function listTenantsWithSamples(sqlPool: SqlQuery, before: Date, limit: number): Promise<string[]> {
  const rows = await runBuilt(
    sqlPool.query,
    build.selectFrom('online_eval_samples').select(sql<string>`tenant_id::text`.as('tenant_id')).where('created_at', '<', before).groupBy('tenant_id').limit(limit),
  );
  return rows.map((r) => r.tenant_id);
}

/** Deletes the tenant's queued samples whose input's `user_id` is the end user (an erasure); how many. */
export async function deleteUserOnlineSamples(em: EntityManager, tenantId: string, userId: string): Promise<number> {
  const result = await kyselyOf(em).deleteFrom('online_eval_samples').where('tenant_id', '=', tenantId).where(sql<string>`input ->> 'user_id'`, '=', userId).executeTakeFirst();
  return Number(result.numDeletedRows ?? 0n);
}

/** Deletes the rule's queued samples (the rule was deleted: the queue has no foreign key to it); how many. */
export async function deleteRuleOnlineSamples(em: EntityManager, tenantId: string, ruleId: string): Promise<number> {
  const result = await kyselyOf(em).deleteFrom('online_eval_samples').where('tenant_id', '=', tenantId).where('rule_id', '=', ruleId).executeTakeFirst();
  return Number(result.numDeletedRows ?? 0n);
}
