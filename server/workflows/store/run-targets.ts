// Reads of the workflows table that start runs: a live run's lookup, a webhook's workflow by slug,
// an event's workflows. Reads only (store/workflows.ts writes that table). On the SqlPool, built
// with db/statements.ts: the hot ones are named prepared statements of the run and webhook intake.
import { sql } from 'kysely';
import type { SqlPool } from '../../../db/sql-pool.js';
import { build, runBuilt, statement } from '../../../db/statements.js';
import { TENANT_SCOPE_SELECTION, type TenantScopeRow } from '../../tenants/tenant-scope.js';

const LIVE_LOOKUP = statement<{ tenantId: string; workflowKey: string; workflowId: string | null }>()('liya_workflow_live_lookup', (p) =>
  build
    .selectFrom('workflows')
    .select((eb) => ['id', 'workflow_key', 'live_version', 'max_concurrent_runs', eb('webhook_secret', 'is not', null).as('has_secret')])
    .where('tenant_id', '=', p.tenantId)
    .where((eb) =>
      eb.or([
        eb('workflow_key', '=', p.workflowKey),
        eb.and([eb(sql`${p.workflowId}::uuid`, 'is not', null), eb('id', '=', sql<string>`${p.workflowId}::uuid`)]),
      ]),
    )
    .where((eb) => eb.ref('is_active'))
    .where('live_version', 'is not', null),
).as<{ id: string; workflow_key: string; live_version: number; max_concurrent_runs: number | null; has_secret: boolean }>();

/** The active, deployed workflow of a key (or id) of the tenant: the few columns a live run needs. */
export async function findLiveWorkflow(sql: SqlPool, tenantId: string, workflowKey: string, workflowId: string | null) {
  const [live] = await LIVE_LOOKUP.run(sql, { tenantId, workflowKey, workflowId });
  return live ?? null;
}

export interface WebhookWorkflowRow extends TenantScopeRow {
  id: string;
  tenant_id: string;
  workflow_key: string;
  live_version: number;
  max_concurrent_runs: number | null;
  webhook_secret: string | null;
  previous_webhook_secret: string | null;
  previous_valid: boolean;
}

/** The active, deployed webhook workflows of an active tenant, with its tenant's scope. */
const webhookWorkflows = () =>
  build
    .selectFrom('workflows as w')
    .innerJoin('tenants as t', 't.id', 'w.tenant_id')
    .select((eb) => [
      'w.id', 'w.tenant_id', 'w.workflow_key', 'w.live_version', 'w.max_concurrent_runs', 'w.webhook_secret', 'w.previous_webhook_secret',
      eb.fn.coalesce(eb('w.previous_secret_valid_until', '>', sql<Date>`now()`), sql.lit(false)).as('previous_valid'), ...TENANT_SCOPE_SELECTION,
    ])
    .where((eb) => eb.ref('w.is_active'))
    .where('w.live_version', 'is not', null)
    .where('w.trigger_type', '=', sql.lit('webhook'))
    .where((eb) => eb.ref('t.is_active'));

const WEBHOOK_WORKFLOW = statement<{ slug: string }>()('liya_webhook_workflow', (p) => webhookWorkflows().where('w.webhook_slug', '=', p.slug)).as<WebhookWorkflowRow>();

/** The active, deployed webhook workflow of a slug (of an active tenant), with its tenant's scope. */
export async function findWebhookWorkflow(sql: SqlPool, slug: string): Promise<WebhookWorkflowRow | null> {
  const [workflow] = await WEBHOOK_WORKFLOW.run(sql, { slug });
  return workflow ?? null;
}

const WEBHOOK_WORKFLOWS = statement<{ slugs: string[] }>()('liya_webhook_workflows', (p) =>
  webhookWorkflows()
    .select('w.webhook_slug as slug')
    .where(sql<boolean>`${sql.ref('w.webhook_slug')} = any(${p.slugs}::text[])`),
).as<WebhookWorkflowRow & { slug: string }>();

/**
 * `findWebhookWorkflow` for several slugs in one statement (the deliveries arriving at the same
 * moment), keyed by slug; a slug without an active webhook workflow has no entry.
 */
export async function findWebhookWorkflows(sql: SqlPool, slugs: string[]): Promise<Map<string, WebhookWorkflowRow>> {
  const rows = await WEBHOOK_WORKFLOWS.run(sql, { slugs });
  return new Map(rows.map(({ slug, ...row }) => [slug, row]));
}

const eventWorkflowsOf = (tenantId: string, eventName: string) =>
  build
    .selectFrom('workflows')
    .select(['id', 'workflow_key', 'live_version', 'max_concurrent_runs'])
    .where('tenant_id', '=', tenantId)
    .where((eb) => eb.ref('is_active'))
    .where('live_version', 'is not', null)
    .where('trigger_type', '=', sql.lit('event'))
    .where('trigger_event', '=', eventName)
    .orderBy('workflow_key');

/** The tenant's active, deployed workflows triggered by the event, by key. */
export async function listEventWorkflows(sql: SqlPool, tenantId: string, eventName: string) {
  return (await runBuilt(sql, eventWorkflowsOf(tenantId, eventName))) as { id: string; workflow_key: string; live_version: number; max_concurrent_runs: number | null }[];
}
