// The tenant_retention table (each tenant's own retention per history kind); this module alone writes it.
import { sql } from 'kysely';
import { kyselyOf } from '../../../db/kysely.js';
import type { EntityManager } from '../../../db/orm.js';

/** A tenant's plan and the days it set, by kind (kinds it never set are absent). */
export interface TenantRetentionRow {
  tenant_id: string;
  plan: string;
  own: Record<string, number>;
}

const ownDays = sql<Record<string, number>>`coalesce(jsonb_object_agg(r.kind, r.days) filter (where r.kind is not null), '{}'::jsonb)`;

/** One tenant's plan and settings; undefined when there is no such tenant. */
export async function selectTenantRetention(em: EntityManager, tenantId: string): Promise<TenantRetentionRow | undefined> {
  return kyselyOf(em)
    .selectFrom('tenants as t')
    .leftJoin('tenant_retention as r', 'r.tenant_id', 't.id')
    .select(['t.id as tenant_id', 't.plan', ownDays.as('own')])
    .where('t.id', '=', tenantId)
    .groupBy('t.id')
    .executeTakeFirst();
}

/**
 * Every tenant's plan and settings, for the retention job: one row per tenant (a hundred thousand
 * tenants are a few megabytes, read once a run).
 */
export async function selectAllTenantRetention(em: EntityManager): Promise<TenantRetentionRow[]> {
  return kyselyOf(em)
    .selectFrom('tenants as t')
    .leftJoin('tenant_retention as r', 'r.tenant_id', 't.id')
    .select(['t.id as tenant_id', 't.plan', ownDays.as('own')])
    .groupBy('t.id')
    .execute();
}

/** Sets (a number) or clears (null: back to the plan's days) the tenant's days per kind, in the caller's transaction. */
export async function saveTenantRetention(em: EntityManager, tenantId: string, changes: Record<string, number | null>, updatedBy: string): Promise<void> {
  const set = Object.entries(changes).filter((c): c is [string, number] => c[1] !== null);
  const cleared = Object.entries(changes).filter(([, days]) => days === null).map(([kind]) => kind);
  const db = kyselyOf(em);
  if (cleared.length > 0) await db.deleteFrom('tenant_retention').where('tenant_id', '=', tenantId).where('kind', 'in', cleared).execute();
  if (set.length > 0) {
    await db
      .insertInto('tenant_retention')
      .values(set.map(([kind, days]) => ({ tenant_id: tenantId, kind, days, updated_by: updatedBy, updated_at: sql<Date>`now()` })))
      .onConflict((oc) => oc.columns(['tenant_id', 'kind']).doUpdateSet({ days: (eb) => eb.ref('excluded.days'), updated_by: updatedBy, updated_at: sql<Date>`now()` }))
      .execute();
  }
}
