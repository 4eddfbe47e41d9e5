// The workflows table; this module alone writes it.
import { LockMode } from '@mikro-orm/core';
import { sql } from 'kysely';
import { Workflow, type IWorkflow } from '../../../db/entities/workflow.js';
import { kyselyOf } from '../../../db/kysely.js';
import type { EntityManager } from '../../../db/orm.js';
import type { SqlPool } from '../../../db/sql-pool.js';
import { build, runBuilt } from '../../../db/statements.js';
import { isUniqueViolation } from '../../../db/unique-violation.js';

export type { IWorkflow };

/** A workflow of the tenant by id or by workflow_key; null when there is none. */
export async function findWorkflowBy(em: EntityManager, tenantId: string, by: { id: string } | { workflowKey: string }): Promise<IWorkflow | null> {
  return em.findOne(Workflow, { tenant: tenantId, ...by });
}

/** The workflow, locked (`for update`) until the end of `tx`'s transaction. */
export async function lockWorkflow(tx: EntityManager, id: string): Promise<IWorkflow> {
  return tx.findOneOrFail(Workflow, { id }, { lockMode: LockMode.PESSIMISTIC_WRITE });
}

/** Deployed, active workflows, by workflow_key. */
export async function listLiveWorkflows(em: EntityManager, tenantId: string): Promise<IWorkflow[]> {
  return em.find(Workflow, { tenant: tenantId, isActive: true, liveVersion: { $ne: null } }, { orderBy: { workflowKey: 'asc' } });
}

/** Every workflow deployed at least once (switched on or off), by key. */
export async function listDeployedWorkflows(em: EntityManager, tenantId: string): Promise<IWorkflow[]> {
  return em.find(Workflow, { tenant: tenantId, liveVersion: { $ne: null } }, { orderBy: { workflowKey: 'asc' } });
}

/** A new draft workflow, written by the next flush of `em`. */
export function newDraftWorkflow(
  em: EntityManager,
  tenantId: string,
  values: { workflowKey: string; name: string; description: string | null; triggerType: string; draftSteps: unknown[] },
): IWorkflow {
  return em.create(Workflow, {
    tenant: tenantId, workflowKey: values.workflowKey, name: values.name, description: values.description, status: 'draft', isActive: false,
    triggerType: values.triggerType, triggerEvent: null, webhookSlug: null, webhookSecret: null, previousWebhookSecret: null, previousSecretValidUntil: null, maxConcurrentRuns: null, liveVersion: null, liveSteps: null, draftSteps: values.draftSteps,
  });
}

/** Writes the changes `em` holds (workflows, with whatever else the caller queued, such as its audit entry). */
export async function flushWorkflowChanges(em: EntityManager): Promise<void> {
  await em.flush();
}

/** As flushWorkflowChanges; a unique violation (a taken workflow_key) is `{ taken: true }` instead of an error. */
export async function flushWorkflowChangesUnlessTaken(em: EntityManager): Promise<{ taken: boolean }> {
  try {
    await em.flush();
    return { taken: false };
  } catch (err) {
    if (isUniqueViolation(err)) return { taken: true };
    throw err;
  }
}

/** Removes the workflow for good (its versions, runs and ticks go with it: on delete cascade). */
export async function deleteWorkflowRow(em: EntityManager, tenantId: string, id: string): Promise<void> {
  await kyselyOf(em).deleteFrom('workflows').where('id', '=', id).where('tenant_id', '=', tenantId).execute();
}

export interface ScheduledWorkflowRow {
  id: string;
  workflow_key: string;
  live_version: number | null;
  is_active: boolean;
  live_steps: unknown[] | null;
  max_concurrent_runs: number | null;
}

/** What a schedule tick needs of its workflow. */
export async function findScheduledWorkflow(sql: SqlPool, workflowId: string, tenantId: string): Promise<ScheduledWorkflowRow | undefined> {
  const [row] = await runBuilt(sql, scheduledWorkflowOf(workflowId, tenantId));
  return row as ScheduledWorkflowRow | undefined;
}

// On the SqlPool: the schedule job and the run-start path run there.
const scheduledWorkflowOf = (workflowId: string, tenantId: string) =>
  build
    .selectFrom('workflows')
    .select(['id', 'workflow_key', 'live_version', 'is_active', 'live_steps', 'max_concurrent_runs'])
    .where('id', '=', workflowId)
    .where('tenant_id', '=', tenantId);

const secretSetting = (workflowId: string, tenantId: string, stored: string) =>
  build
    .updateTable('workflows')
    .set({ webhook_secret: stored })
    .where('id', '=', workflowId)
    .where('tenant_id', '=', tenantId)
    .where('webhook_secret', 'is', null)
    .returning(sql.lit(1).as('one'));

/** Stores `stored` as the workflow's webhook secret when it has none; whether it was stored. */
export async function setWebhookSecretIfUnset(sql: SqlPool, workflowId: string, tenantId: string, stored: string): Promise<boolean> {
  const rows = await runBuilt(sql, secretSetting(workflowId, tenantId, stored));
  return rows.length > 0;
}

const secretClearing = (workflowId: string, stored: string) =>
  build.updateTable('workflows').set({ webhook_secret: sql.lit(null) }).where('id', '=', workflowId).where('webhook_secret', '=', stored);

/** Takes back a secret stored by setWebhookSecretIfUnset (only while it is still that one). */
export async function clearWebhookSecret(sql: SqlPool, workflowId: string, stored: string): Promise<void> {
  await runBuilt(sql, secretClearing(workflowId, stored));
}

/** The tenant's workflows (any status) whose id is one of `ids` or whose key is one of `keys`. */
export async function findWorkflowRefs(em: EntityManager, tenantId: string, ids: string[], keys: string[]): Promise<{ id: string; workflow_key: string }[]> {
  if (!ids.length && !keys.length) return [];
  return kyselyOf(em)
    .selectFrom('workflows')
    .select(['id', 'workflow_key'])
    .where('tenant_id', '=', tenantId)
    .where((eb) => eb.or([...(ids.length ? [eb('id', 'in', ids)] : []), ...(keys.length ? [eb('workflow_key', 'in', keys)] : [])]))
    .execute();
}
