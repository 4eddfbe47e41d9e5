import type { EntityManager } from '../../db/orm.js';
import type { Actor } from '../actor.js';
import { recordAuditNow } from '../audit/audit.service.js';
import type { AppConfig } from '../config.js';
import { invalidInput, notFound, type ValidationIssue } from '../errors.js';
import { effectiveRetention, HISTORY_KINDS, HISTORY_POLICY, retentionForPlan, type RetentionDays } from './retention-policy.js';
import type { RetentionDto, RetentionUpdateInput } from './retention.schemas.js';
import { selectAllTenantRetention, selectTenantRetention, saveTenantRetention, type TenantRetentionRow } from './store/tenant-retention.js';

export type RetentionConfig = Pick<AppConfig, 'RETENTION_DAYS' | 'HIRING_RETENTION_FLOOR_DAYS'>;

function toDto(row: TenantRetentionRow, config: RetentionConfig): RetentionDto {
  const planDays = retentionForPlan(row.plan, config.RETENTION_DAYS);
  const days = effectiveRetention(planDays, row.own);
  const floor = config.HIRING_RETENTION_FLOOR_DAYS;
  return {
    plan: row.plan,
    hiring_floor_days: floor,
    kinds: HISTORY_KINDS.map((kind) => ({
      kind,
      description: HISTORY_POLICY[kind].description,
      days: days[kind],
      plan_days: planDays[kind],
      min_days: HISTORY_POLICY[kind].minDays,
      custom: row.own[kind] !== undefined,
      hiring_floor_days: HISTORY_POLICY[kind].hiringFloor && floor > 0 ? floor : null,
    })),
  };
}

async function loadRow(em: EntityManager, tenantId: string): Promise<TenantRetentionRow> {
  const row = await selectTenantRetention(em, tenantId);
  if (!row) throw notFound('Tenant');
  return row;
}

/** The tenant's retention per kind of history, with its plan's bounds. */
export async function getTenantRetention(em: EntityManager, config: RetentionConfig, tenantId: string): Promise<RetentionDto> {
  return toDto(await loadRow(em, tenantId), config);
}

/**
 * Sets the tenant's days for the kinds given (null: back to the plan's days). Each must lie within
 * the kind's minimum and the plan's days, or nothing changes: 400 INVALID_INPUT naming each bound.
 */
export async function updateTenantRetention(em: EntityManager, config: RetentionConfig, tenantId: string, actor: Actor, input: RetentionUpdateInput): Promise<RetentionDto> {
  return em.transactional(async (tx) => {
    const row = await loadRow(tx, tenantId);
    const planDays = retentionForPlan(row.plan, config.RETENTION_DAYS);
    const changes: Record<string, number | null> = {};
    const issues: ValidationIssue[] = [];
    for (const kind of HISTORY_KINDS) {
      const days = input[kind];
      if (days === undefined) continue;
      const min = HISTORY_POLICY[kind].minDays;
      if (days !== null && (days < min || days > planDays[kind])) {
        issues.push({ path: kind, message: `between ${min} and ${planDays[kind]} days on the ${row.plan} plan`, code: 'out_of_bounds' });
      }
      if (days !== (row.own[kind] ?? null)) changes[kind] = days;
    }
    if (issues.length > 0) throw invalidInput(`Retention out of the ${row.plan} plan's bounds`, issues);
    if (Object.keys(changes).length === 0) return toDto(row, config);
    await saveTenantRetention(tx, tenantId, changes, actor.name);
    const details = Object.fromEntries(Object.entries(changes).map(([kind, to]) => [kind, { from: row.own[kind] ?? null, to }]));
    await recordAuditNow(tx, tenantId, actor, { action: 'retention.updated', targetType: 'tenant', targetId: tenantId, details });
    const own = { ...row.own };
    for (const [kind, days] of Object.entries(changes)) {
      if (days === null) delete own[kind];
      else own[kind] = days;
    }
    return toDto({ ...row, own }, config);
  });
}

/** What every tenant keeps of each kind now, for the retention job. */
export async function listTenantRetention(em: EntityManager, config: RetentionConfig): Promise<{ tenantId: string; days: RetentionDays }[]> {
  const rows = await selectAllTenantRetention(em);
  return rows.map((row) => ({ tenantId: row.tenant_id, days: effectiveRetention(retentionForPlan(row.plan, config.RETENTION_DAYS), row.own) }));
}
