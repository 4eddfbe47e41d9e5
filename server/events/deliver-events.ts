// The delivery runner: one job per tenant (in the tenant's own graphile-worker queue) sends the
// tenant's due deliveries as Standard Webhooks messages through the SSRF-safe client, logs every
// attempt, schedules retries by EVENT_RETRY_SCHEDULE and pauses a subscription that keeps failing.
// At most the plan's event_deliveries_per_second are claimed per second; a job works a slice of a
// few seconds and then queues the next, so a busy tenant never holds a worker slot for long, and a
// slow receiver holds its own tenant's one slot only: other tenants' deliveries run beside it.
import type { AppDeps } from '../deps.js';
import type { JobPayload } from '../jobs/contracts.js';
import type { deliverEventsJob } from '../jobs/contracts.js';
import { decryptSecretCached } from '../llm/secret-box.js';
import { readLimited, postSignedWebhook } from '../net/signed-webhook.js';
import { emitTelemetry } from '../observability/telemetry.js';
import { loadTenantScope } from '../tenants/tenant-scope.js';
import { limitsForPlan } from '../tenants/plan-limits.js';
import { claimDueDeliveries, nextDueDelivery, queueDeliveries, settleDelivery, type ClaimedDelivery } from './store/event-deliveries.js';

/** How long one job works before it hands over to the next (its tenant's queue keeps the order). */
const SLICE_MS = 5_000;
/** The answer's first characters kept in the attempt log. */
const EXCERPT_CHARS = 500;
/** Bytes of an answer read at most (the excerpt is cut from them). */
const READ_BYTES = 4_096;

/** The secret that signs a subscription's deliveries: its context binds it to the tenant and the subscription. */
export const subscriptionSecretContext = (tenantId: string, subscriptionId: string) => `event-subscription-secret:${tenantId}:${subscriptionId}`;

/** The delivery body: the Standard Webhooks payload shape with the event's id and version. */
export function eventBody(tenantId: string, row: Pick<ClaimedDelivery, 'event_id' | 'type' | 'version' | 'created_at' | 'data'>): string {
  return JSON.stringify({ id: row.event_id, type: row.type, version: row.version, timestamp: row.created_at, tenant_id: tenantId, data: row.data });
}

export async function deliverEvents(deps: AppDeps, payload: JobPayload<typeof deliverEventsJob>): Promise<void> {
  const tenantId = payload.tenant_id;
  const scope = await loadTenantScope(deps.sql, tenantId);
  // A tenant gone or deactivated: its deliveries wait (a deleted tenant's went with it).
  if (!scope) return;
  const perSecond = limitsForPlan(scope.plan, deps.config.PLAN_LIMITS).event_deliveries_per_second;
  // A claimed delivery is due again this long after its claim: a runner that dies mid-send leaves it
  // to the next one then (its attempt ends within the time limit; 5 s more for the outcome's write).
  const leaseSeconds = deps.config.EVENT_DELIVERY_TIMEOUT_MS / 1000 + 5;
  const started = performance.now();
  // The plan's rate, counted per second of this job; each claim is one batch sent at once, so a
  // tenant never has more requests open than its plan's deliveries per second (a smaller batch
  // would starve a slow receiver: at 10 s an answer, 32 at a time is 3.2 deliveries a second).
  let windowStart = Date.now();
  let sentInWindow = 0;
  for (;;) {
    if (Date.now() - windowStart >= 1000) {
      windowStart = Date.now();
      sentInWindow = 0;
    }
    const room = perSecond - sentInWindow;
    if (room <= 0) {
      // The plan's rate is used for this second: the next claim waits for the next one.
      await queueDeliveries(deps.sql, tenantId, new Date(windowStart + 1000));
      return;
    }
    const claimed = await claimDueDeliveries(deps.sql, tenantId, room, leaseSeconds);
    sentInWindow += claimed.length;
    await Promise.all(claimed.map((row) => attemptDelivery(deps, tenantId, row)));
    const elapsed = performance.now() - started;
    if (elapsed > SLICE_MS) {
      await queueNextDue(deps, tenantId);
      return;
    }
    if (claimed.length) continue;
    // Nothing due now. A retry due within this job's slice is waited for here (the job runner polls
    // for jobs due later only every second); a later one gets a job of its own at its time.
    const due = await nextDueDelivery(deps.sql, tenantId);
    if (due === null) return;
    const wait = due - Date.now();
    if (wait > SLICE_MS - elapsed) {
      await queueDeliveries(deps.sql, tenantId, new Date(due));
      return;
    }
    if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
  }
}

/** The next job at the tenant's earliest due delivery (now when one is due already). */
async function queueNextDue(deps: AppDeps, tenantId: string) {
  const due = await nextDueDelivery(deps.sql, tenantId);
  if (due !== null) await queueDeliveries(deps.sql, tenantId, new Date(Math.max(due, Date.now())));
}

async function attemptDelivery(deps: AppDeps, tenantId: string, row: ClaimedDelivery): Promise<void> {
  const schedule = deps.config.EVENT_RETRY_SCHEDULE;
  const sentAt = performance.now();
  // The delivery lag: from the change's commit (the event's time, as the database wrote it) to the first attempt.
  const lagMs = row.attempts === 1 ? Math.max(0, Date.now() - row.created_ms) : undefined;
  let statusCode: number | null = null;
  let excerpt: string | null = null;
  let error: string | null = null;
  let retryAfter: number | null = null;
  try {
    const context = subscriptionSecretContext(tenantId, row.subscription_id);
    const em = () => deps.orm.em.fork();
    const secrets = [await decryptSecretCached(em, deps.config, row.secret, context)];
    if (row.previous_secret) secrets.push(await decryptSecretCached(em, deps.config, row.previous_secret, context));
    if (secrets.some((s) => !s)) throw new Error('the signing secret cannot be read with this server\'s encryption key');
    const res = await postSignedWebhook(deps.outbound, row.url, secrets as string[], {
      id: row.event_id,
      body: eventBody(tenantId, row),
      timeoutMs: deps.config.EVENT_DELIVERY_TIMEOUT_MS,
    });
    statusCode = res.status;
    const header = res.headers.get('retry-after');
    if (header && /^\d+$/.test(header)) retryAfter = Number(header);
    excerpt = (await readLimited(res, READ_BYTES)).text.slice(0, EXCERPT_CHARS) || null;
  } catch (err) {
    error = describeFailure(err, deps.config.EVENT_DELIVERY_TIMEOUT_MS);
  }
  const latencyMs = Math.round(performance.now() - sentAt);
  const ok = statusCode !== null && statusCode >= 200 && statusCode < 300;
  const gone = statusCode === 410;
  const outcome = ok ? 'delivered' : gone || row.attempts > schedule.length ? 'failed' : 'retry';
  const wait = schedule[Math.min(row.attempts, schedule.length) - 1] ?? 0;
  // A receiver's Retry-After is honoured when it asks for longer than the schedule (up to a day).
  const retrySeconds = Math.max(wait, Math.min(retryAfter ?? 0, 24 * 3600));
  const failure = error ?? (statusCode !== null ? `HTTP ${statusCode}` : 'no answer');
  const pauseReason = gone
    ? 'the receiver answered 410 Gone'
    : `${deps.config.EVENT_PAUSE_AFTER_FAILED_DELIVERIES} deliveries in a row failed every attempt (the last: ${failure})`;
  const paused = await settleDelivery(deps.sql, {
    deliveryId: row.id,
    tenantId,
    attempt: row.attempts,
    statusCode,
    latencyMs,
    excerpt,
    error: ok ? null : failure.slice(0, 500),
    outcome,
    retrySeconds,
    gone,
    pauseAfter: deps.config.EVENT_PAUSE_AFTER_FAILED_DELIVERIES,
    pauseReason,
  });
  emitTelemetry('eventDeliveryAttempted', { type: row.type, outcome: outcome === 'retry' ? 'retrying' : outcome, lagMs });
  if (paused) deps.log.warn({ tenant: tenantId, subscription: row.subscription_id, reason: pauseReason }, 'event subscription paused');
}

function describeFailure(err: unknown, timeoutMs: number): string {
  const e = err as { name?: string; code?: string; message?: string; cause?: { code?: string; message?: string } };
  if (e?.name === 'TimeoutError' || e?.name === 'AbortError') return `no answer within ${timeoutMs} ms`;
  if (e?.code === 'OUTBOUND_BLOCKED') return e.message ?? 'the address is not allowed';
  const cause = e?.cause?.code ?? e?.cause?.message;
  return `${e?.message ?? String(err)}${cause ? ` (${cause})` : ''}`.slice(0, 500);
}
