// The deployments table; this module alone writes it.
import { sql as kysql } from 'kysely';
import { Deployment } from '../../../db/entities/deploy.js';
import { countCapped, newestFirstPage } from '../../../db/keyset.js';
import { kyselyOf } from '../../../db/kysely.js';
import type { EntityManager } from '../../../db/orm.js';
import type { PageRequest } from '../../common/pagination.js';
import type { InferEntity } from '@mikro-orm/core';

export type DeploymentRow = InferEntity<typeof Deployment>;

export interface NewDeployment {
  tenantId: string;
  status: string;
  plan: Record<string, unknown>;
  prune: boolean;
  minPassRate: number;
  baseDigest: string;
  gate: { suite: string; run_id: string; model?: string | null }[];
  minted: { workflow_key: string; webhook_url: string }[];
  createdBy: string;
  publishedAt: Date | null;
}

/**
 * A new deployment, written now. One INSERT through Kysely rather than an entity: a plan of
 * thousands of changes is a large JSON value, and the unit of work would clone and compare it on
 * the event loop for nothing (the row is never changed through this unit).
 */
export async function insertDeployment(em: EntityManager, values: NewDeployment): Promise<DeploymentRow> {
  const row = await kyselyOf(em)
    .insertInto('deployments')
    .values({
      tenant_id: values.tenantId,
      status: values.status,
      plan: kysql<Record<string, unknown>>`${JSON.stringify(values.plan)}::jsonb`,
      prune: values.prune,
      min_pass_rate: values.minPassRate,
      base_digest: values.baseDigest,
      gate: kysql<{ suite: string; run_id: string; model?: string | null }[]>`${JSON.stringify(values.gate)}::jsonb`,
      minted: kysql<{ workflow_key: string; webhook_url: string }[]>`${JSON.stringify(values.minted)}::jsonb`,
      created_by: values.createdBy,
      created_at: kysql<Date>`now()`,
      published_at: values.publishedAt,
    })
    .returning(['id', 'created_at'])
    .executeTakeFirstOrThrow();
  const { tenantId: _t, ...rest } = values;
  return { ...rest, id: row.id, createdAt: new Date(row.created_at), error: null } as unknown as DeploymentRow;
}

export async function findTenantDeployment(em: EntityManager, tenantId: string, id: string): Promise<DeploymentRow | null> {
  return em.findOne(Deployment, { id, tenant: tenantId });
}

/**
 * A page of the tenant's deployments, newest first (ties by id), and one more when there is a next
 * page; on (tenant_id, created_at desc, id desc), from the offset or the cursor. Each comes with its
 * exact sort key (`cursorKey`).
 */
export async function listTenantDeployments(em: EntityManager, tenantId: string, page: PageRequest): Promise<{ row: DeploymentRow; cursorKey: string }[]> {
  const rows = await newestFirstPage(kyselyOf(em).selectFrom('deployments').selectAll().where('tenant_id', '=', tenantId), 'created_at', page).execute();
  return rows.map(({ cursor_key, ...columns }) => ({ row: em.map(Deployment, columns), cursorKey: cursor_key }));
}

/** How many deployments the tenant has, counted up to `cap` + 1 (pageOfRows says how far). */
export async function countTenantDeployments(em: EntityManager, tenantId: string, cap: number): Promise<number> {
  return countCapped(kyselyOf(em), kyselyOf(em).selectFrom('deployments').where('tenant_id', '=', tenantId).select(kysql.lit(1).as('one')), cap);
}

/** Sets the deployment's outcome on the loaded row and writes it (with whatever else `em` holds). */
export async function updateDeployment(em: EntityManager, row: DeploymentRow, values: Partial<Pick<DeploymentRow, 'status' | 'error' | 'minted' | 'publishedAt'>>): Promise<void> {
  Object.assign(row, values);
  await em.flush();
}

// Any fixed number: the first key of the advisory locks that hold one tenant's deploy work.
const DEPLOY_LOCK_NAMESPACE = 7_311_402;

/**
 * Takes the tenant's deploy lock for the rest of `em`'s transaction; false when another
 * transaction (on any process) holds it. The lock ends with the transaction, so a process that dies
 * mid-publish leaves nothing held: its transaction rolls back and the deployment is as it was.
 */
export async function tryLockTenantDeploys(em: EntityManager, tenantId: string): Promise<boolean> {
  // Raw(advisory-lock): an advisory lock function, which neither the entities nor Kysely's builder can say.
  const { rows } = await kysql<{ locked: boolean }>`select pg_try_advisory_xact_lock(${DEPLOY_LOCK_NAMESPACE}, hashtext(${tenantId})) as locked`.execute(kyselyOf(em));
  return rows[0].locked;
}

/**
 * Deletes deployments that are over `keep` newer ones of their tenant, or older than `before`; one
 * still gating is kept while it is younger than `before`. Returns how many went.
 */
export async function deleteOldDeployments(em: EntityManager, keep: number, before: Date): Promise<number> {
  const result = await kyselyOf(em)
    .deleteFrom('deployments')
    .where((eb) =>
      eb.or([
        eb('created_at', '<', before),
        eb('id', 'in', (sub) =>
          sub
            .selectFrom((inner) =>
              inner
                .selectFrom('deployments')
                .select(['id', kysql<number>`row_number() over (partition by tenant_id order by created_at desc, id desc)`.as('n')])
                .as('ranked'),
            )
            .select('ranked.id')
            .where('ranked.n', '>', keep),
        ),
      ]),
    )
    .executeTakeFirst();
  return Number(result.numDeletedRows);
}
