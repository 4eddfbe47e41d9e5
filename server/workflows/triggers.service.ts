// Runs that start from outside an API call: signed webhook deliveries, events, and the callbacks
// that continue a run waiting at a wait_for_callback step. Each is accepted with one durable
// statement (run and job together) and executed by the job runner.
import { Webhook, WebhookVerificationError } from 'standardwebhooks';
import type { EntityManager } from '../../db/orm.js';
import type { SqlPool } from '../../db/sql-pool.js';
import type { AppDeps } from '../deps.js';
import { AppError, notFound } from '../errors.js';
import { checkJsonBody } from '../common/json-body.js';
import { createTurnBatcher, perPool } from '../common/turn-batcher.js';
import { parseCallbackToken, verifyCallbackToken } from './engine/callback-tokens.js';
import { claimOrFind, idempotencyGuard, hashRequest, releaseIdempotencyKey, saveIdempotentResult, type IdempotencyClaim } from './idempotency.js';
import { concurrencyLimit, createQueuedRun } from './run-admission.js';
import { scopeFromRow, type TenantScope } from '../tenants/tenant-scope.js';
import { prepareRunInput } from './run-input.js';
import { decryptWebhookSecret } from './webhook-secrets.js';
import { loadVersionSteps } from './version-steps.js';
import { findKeyRun } from './store/idempotency-keys.js';
import { findWebhookWorkflow as findWebhookWorkflowRow, findWebhookWorkflows, listEventWorkflows, type WebhookWorkflowRow } from './store/run-targets.js';
import { findRunCallbackKey, findRunCallbackState, keepEarlyCallback, wakeRunWithCallback } from './store/run-waits.js';

const verifiers = new Map<string, Webhook>();
const verifierOf = (secret: string) => {
  let verifier = verifiers.get(secret);
  if (!verifier) {
    if (verifiers.size > 5000) verifiers.clear();
    verifier = new Webhook(secret);
    verifiers.set(secret, verifier);
  }
  return verifier;
};

const invalidSignature = () => new AppError('INVALID_SIGNATURE', 'The webhook signature is missing, invalid or outside the 5-minute window');

/** Standard Webhooks' window, each way, for webhook-timestamp. */
const TOLERANCE_SECONDS = 5 * 60;
const SIGNATURE_ENTRY = /^v\d+[a-z]?,[A-Za-z0-9+/]+={0,2}$/;

/**
 * What can be told from the headers alone (before the body is read): a webhook-id, a
 * webhook-timestamp in seconds within the window, and a webhook-signature of space-separated
 * `<version>,<base64>` entries with at least one `v1`. Anything else is 401 INVALID_SIGNATURE.
 */
export function checkWebhookHeaders(headers: Record<string, string | string[] | undefined>, nowSeconds = Math.floor(Date.now() / 1000)): void {
  const id = headers['webhook-id'];
  const timestamp = headers['webhook-timestamp'];
  const signature = headers['webhook-signature'];
  if (typeof id !== 'string' || !id.trim() || typeof timestamp !== 'string' || typeof signature !== 'string') throw invalidSignature();
  if (!/^\d{1,12}$/.test(timestamp) || Math.abs(nowSeconds - Number(timestamp)) > TOLERANCE_SECONDS) throw invalidSignature();
  const entries = signature.split(' ').filter(Boolean);
  if (!entries.length || entries.length > 20 || !entries.every((e) => SIGNATURE_ENTRY.test(e)) || !entries.some((e) => e.startsWith('v1,'))) throw invalidSignature();
}

export type WebhookWorkflow = WebhookWorkflowRow;

/**
 * The active, deployed webhook workflow of a slug, or 404: looked up before the body is read. The
 * lookups asked for in one turn of the event loop (deliveries arriving together) go as one
 * statement; a lone one as the single-slug statement.
 */
export async function findWebhookWorkflow(deps: AppDeps, slug: string): Promise<WebhookWorkflow> {
  const workflow = await lookupOf(deps.sql).send(slug);
  if (!workflow) throw notFound('Webhook');
  return workflow;
}

const lookupOf = perPool((sql: SqlPool) =>
  createTurnBatcher<string, WebhookWorkflowRow | null>({
    // The route is unauthenticated: a statement never carries more than this many slugs.
    maxBatch: 64,
    sendOne: (slug) => findWebhookWorkflowRow(sql, slug),
    sendMany: async (slugs) => {
      const found = await findWebhookWorkflows(sql, [...new Set(slugs)]);
      // Each caller gets its own copy: the rows are read-only here, but a shared object would be one mistake away.
      return slugs.map((slug) => {
        const row = found.get(slug);
        return row ? { ...row } : null;
      });
    },
  }),
);

/**
 * A signed delivery to `/webhooks/workflows/<slug>` (its workflow from findWebhookWorkflow):
 * verified (Standard Webhooks v1 over the raw body, the current secret or, during a rotation's
 * grace period, the previous one), then a run is queued. A repeated webhook-id answers the first
 * run and starts nothing.
 */
export async function receiveWebhook(emOf: () => EntityManager, deps: AppDeps, workflow: WebhookWorkflow, rawBody: Buffer, headers: Record<string, string | string[] | undefined>) {
  const plainHeaders: Record<string, string> = {};
  for (const name of ['webhook-id', 'webhook-timestamp', 'webhook-signature']) {
    const value = headers[name];
    if (typeof value === 'string') plainHeaders[name] = value;
  }
  const secrets = [workflow.webhook_secret, workflow.previous_valid ? workflow.previous_webhook_secret : null].filter((s): s is string => s !== null);
  let verified = false;
  for (const stored of secrets) {
    // A unit of work only when the secret is not decrypted yet: most deliveries need none.
    const secret = await decryptWebhookSecret(emOf, deps, workflow.tenant_id, workflow.id, stored);
    if (!secret) continue;
    try {
      verifierOf(secret).verify(rawBody, plainHeaders);
      verified = true;
      break;
    } catch (err) {
      // The library parses the body after the signature matched: a signed body that is not JSON is
      // verified, and refused below as INVALID_JSON (or taken as {} when empty).
      if (err instanceof SyntaxError) {
        verified = true;
        break;
      }
      if (!(err instanceof WebhookVerificationError)) throw err;
    }
  }
  if (!verified) throw invalidSignature();

  let input: unknown;
  const text = rawBody.toString('utf8');
  try {
    input = rawBody.length ? JSON.parse(text) : {};
  } catch {
    throw new AppError('INVALID_JSON', 'The webhook body is not valid JSON');
  }
  // Read as raw bytes (the signature covers them), so the app's JSON parser never saw it.
  checkJsonBody(text, input);
  if (typeof input !== 'object' || input === null || Array.isArray(input)) {
    throw new AppError('INVALID_INPUT', 'The webhook body must be a JSON object (it becomes the trigger input)', { issues: [{ path: '(body)', message: 'expected a JSON object' }] });
  }
  const scope = scopeFromRow(workflow, null);
  if (!scope) throw notFound('Webhook');
  const runId = crypto.randomUUID();
  // The webhook-id is the delivery's idempotency key: claimed in the same statement as the run.
  const claim: IdempotencyClaim = { tenantId: workflow.tenant_id, scope: `webhook:${workflow.id}`, key: plainHeaders['webhook-id'].slice(0, 255), requestHash: hashRequest(rawBody), runId };
  const firstRun = () => findKeyRun(deps.sql, claim.tenantId, claim.scope, claim.key);
  // A redelivery answers its first run even when the workflow is full now, and without reading its
  // attachments again; other deliveries skip this look (the claim in the run's statement decides).
  if (workflow.max_concurrent_runs !== null || Array.isArray((input as Record<string, unknown>).attachments)) {
    const first = await firstRun();
    if (first) return { run_id: first.run_id, duplicate: true };
  }
  const prepared = await prepareRunInput(deps, scope, input as Record<string, unknown>);
  const steps = await loadVersionSteps(deps, workflow.tenant_id, workflow.id, workflow.live_version);
  const outcome = await createQueuedRun(
    deps,
    { scope, workflow: { id: workflow.id, key: workflow.workflow_key }, steps, version: workflow.live_version, stateScope: 'live' },
    prepared,
    {
      runId, triggeredBy: 'webhook', environmentId: null, limit: workflow.max_concurrent_runs, guard: idempotencyGuard(claim),
      claim: { scope: claim.scope, key: claim.key, requestHash: claim.requestHash },
    },
  );
  if (outcome.status === 'limited') throw concurrencyLimit(workflow.max_concurrent_runs!);
  if (outcome.status === 'duplicate') return { run_id: (await firstRun())?.run_id ?? null, duplicate: true };
  return { run_id: runId, duplicate: false };
}

export type CallbackToken = NonNullable<ReturnType<typeof parseCallbackToken>>;

/**
 * The run and wait a callback token names, once its MAC checks out under the run's key; an unknown,
 * malformed or forged token is 404. Checked before the body is read.
 */
export async function verifyCallback(deps: AppDeps, token: string): Promise<CallbackToken> {
  const parsed = parseCallbackToken(token);
  if (!parsed) throw notFound('Callback');
  const run = await findRunCallbackKey(deps.sql, parsed.runId);
  if (!run?.callback_key || !verifyCallbackToken(parsed, run.callback_key)) throw notFound('Callback');
  return parsed;
}

/**
 * A POST to a run's callback URL (its token from verifyCallback). A run waiting at that callback
 * goes on (a job continues it, the body becoming the step's output); a run not there yet keeps the
 * body for when it arrives. A token used once (or timed out) answers 409 and changes nothing.
 */
export async function receiveCallback(deps: AppDeps, parsed: CallbackToken, body: unknown) {
  const received = { seq: parsed.seq, body, received_at: new Date().toISOString() };
  for (let attempt = 0; attempt < 3; attempt++) {
    // The run waits at this callback: it goes on.
    const woken = await wakeRunWithCallback(deps.sql, parsed.runId, parsed.seq, JSON.stringify(received));
    if (woken) return { run_id: parsed.runId, accepted: true };
    // The run has not reached it yet: kept until it does.
    const early = await keepEarlyCallback(deps.sql, parsed.runId, parsed.seq, JSON.stringify(received));
    if (early) return { run_id: parsed.runId, accepted: true };
    const now = await findRunCallbackState(deps.sql, parsed.runId);
    if (!now) throw notFound('Callback');
    if (now.callback_seq > parsed.seq || now.early_seq === parsed.seq) {
      throw new AppError('CALLBACK_ALREADY_RECEIVED', 'This callback URL was already used (or its wait timed out)', { run_id: parsed.runId });
    }
    if (['completed', 'failed', 'cancelled', 'rejected'].includes(now.status)) {
      throw new AppError('CALLBACK_ALREADY_RECEIVED', `The run is ${now.status} and takes no callback`, { run_id: parsed.runId, status: now.status });
    }
    // The run moved between the statements (it just reached its wait): try again.
  }
  throw new AppError('RUN_BUSY', 'The run is changing state; retry the callback', { run_id: parsed.runId }, { 'Retry-After': '1' });
}

/**
 * `POST /v1/events`: queues a run of every active workflow of the tenant whose trigger is this
 * event. A workflow at its max_concurrent_runs is skipped (listed in `skipped`).
 */
export async function publishEvent(em: EntityManager, deps: AppDeps, scope: TenantScope, event: { name: string; payload: Record<string, unknown> }, idempotencyKey: string | null) {
  let claim: IdempotencyClaim | null = null;
  if (idempotencyKey) {
    claim = { tenantId: scope.tenantId, scope: 'events', key: idempotencyKey, requestHash: hashRequest(event), runId: null };
    const found = await claimOrFind(deps.sql, claim, 10_000);
    if (!found.claimed) {
      const result = (found.existing.result ?? { runs: [], skipped: [] }) as { runs: string[]; skipped: { workflow_key: string; reason: string }[] };
      return { ...result, idempotent_replay: true };
    }
  }
  try {
    const result = await startEventRuns(deps, scope, event);
    if (claim) await saveIdempotentResult(deps.sql, claim, result);
    return result;
  } catch (err) {
    // Refused before anything was saved: the key is free again.
    if (claim) await releaseIdempotencyKey(deps.sql, claim).catch(() => undefined);
    throw err;
  }
}

async function startEventRuns(deps: AppDeps, scope: TenantScope, event: { name: string; payload: Record<string, unknown> }) {
  const workflows = await listEventWorkflows(deps.sql, scope.tenantId, event.name);
  const input = await prepareRunInput(deps, scope, event.payload);
  const runs: string[] = [];
  const skipped: { workflow_key: string; reason: string }[] = [];
  for (const w of workflows) {
    try {
      const steps = await loadVersionSteps(deps, scope.tenantId, w.id, w.live_version);
      const outcome = await createQueuedRun(deps, { scope, workflow: { id: w.id, key: w.workflow_key }, steps, version: w.live_version, stateScope: 'live' }, input, {
        triggeredBy: 'event', environmentId: scope.environmentId, limit: w.max_concurrent_runs,
      });
      if (outcome.status === 'created') runs.push(outcome.runId);
      else skipped.push({ workflow_key: w.workflow_key, reason: 'CONCURRENCY_LIMIT' });
    } catch (err) {
      // Nothing started yet: the request fails as a whole (and its Idempotency-Key is free again).
      // Runs already started stay, and the answer (kept for the key) lists this workflow as skipped,
      // so a repeat with the same key cannot start them a second time.
      if (!runs.length) throw err;
      deps.log.error({ err, workflow: w.workflow_key }, 'event run could not be started');
      skipped.push({ workflow_key: w.workflow_key, reason: 'INTERNAL_ERROR' });
    }
  }
  return { runs, skipped };
}
