// Reads of the workflows table that start runs: a live run's lookup, a webhook's workflow by slug,
// an event's workflows. Reads only (store/workflows.ts writes that table). Raw SQL on the SqlPool:
// the hot ones are named prepared statements of the run and webhook intake.
import type { SqlPool } from '../../../db/sql-pool.js';
import { TENANT_SCOPE_COLUMNS, type TenantScopeRow } from '../../tenants/tenant-scope.js';

/** The active, deployed workflow of a key (or id) of the tenant: the few columns a live run needs. */
export async function findLiveWorkflow(sql: SqlPool, tenantId: string, workflowKey: string, workflowId: string | null) {
  const [live] = await sql.query<{ id: string; workflow_key: string; live_version: number; max_concurrent_runs: number | null; has_secret: boolean }>(
    `select id::text, workflow_key, live_version, max_concurrent_runs, webhook_secret is not null as has_secret from workflows
        where tenant_id = $1 and (workflow_key = $2 or ($3::uuid is not null and id = $3::uuid)) and is_active and live_version is not null`,
    [tenantId, workflowKey, workflowId],
    'liya_workflow_live_lookup',
  );
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

/** The active, deployed webhook workflow of a slug (of an active tenant), with its tenant's scope. */
export async function findWebhookWorkflow(sql: SqlPool, slug: string): Promise<WebhookWorkflowRow | null> {
  const [workflow] = await sql.query<WebhookWorkflowRow>(
    `select w.id::text, w.tenant_id::text, w.workflow_key, w.live_version, w.max_concurrent_runs, w.webhook_secret, w.previous_webhook_secret,
            coalesce(w.previous_secret_valid_until > now(), false) as previous_valid, ${TENANT_SCOPE_COLUMNS}
       from workflows w join tenants t on t.id = w.tenant_id
      where w.webhook_slug = $1 and w.is_active and w.live_version is not null and w.trigger_type = 'webhook' and t.is_active`,
    [slug],
    'liya_webhook_workflow',
  );
  return workflow ?? null;
}

/**
 * `findWebhookWorkflow` for several slugs in one statement (the deliveries arriving at the same
 * moment), keyed by slug; a slug without an active webhook workflow has no entry.
 */
export async function findWebhookWorkflows(sql: SqlPool, slugs: string[]): Promise<Map<string, WebhookWorkflowRow>> {
  const rows = await sql.query<WebhookWorkflowRow & { slug: string }>(
    `select w.webhook_slug as slug, w.id::text, w.tenant_id::text, w.workflow_key, w.live_version, w.max_concurrent_runs, w.webhook_secret, w.previous_webhook_secret,
            coalesce(w.previous_secret_valid_until > now(), false) as previous_valid, ${TENANT_SCOPE_COLUMNS}
       from workflows w join tenants t on t.id = w.tenant_id
      where w.webhook_slug = any($1::text[]) and w.is_active and w.live_version is not null and w.trigger_type = 'webhook' and t.is_active`,
    [slugs],
    'liya_webhook_workflows',
  );
  return new Map(rows.map(({ slug, ...row }) => [slug, row]));
}

/** The tenant's active, deployed workflows triggered by the event, by key. */
export async function listEventWorkflows(sql: SqlPool, tenantId: string, eventName: string) {
  return sql.query<{ id: string; workflow_key: string; live_version: number; max_concurrent_runs: number | null }>(
    `select id::text, workflow_key, live_version, max_concurrent_runs from workflows
      where tenant_id = $1 and is_active and live_version is not null and trigger_type = 'event' and trigger_event = $2 order by workflow_key`,
    [tenantId, eventName],
  );
}
