// Online evaluation's intake (the job online_eval_intake, one per tenant): takes the tenant's
// sampled production runs off the queue, adds each to its rule's window of the day (an eval run,
// execution_mode online) up to the rule's daily cap, and queues each window's scoring, which the
// evaluation engine does as for any run: the same check, judge and custom scorer, the same result
// rows. Samples over the cap are counted on the window (samples_capped), not scored. Taking the
// samples and writing the cases is one transaction: a crash leaves them queued, never half-moved.
import { enqueueWith } from '../jobs/job-queue.js';
import { evalRunJob, onlineEvalIntakeJob } from '../jobs/contracts.js';
import type { AppDeps } from '../deps.js';
import { observeOnlineSamples } from '../observability/telemetry.js';
import { judgeModelOf } from './eval-runs.service.js';
import { listTenantsWithSamples, takeQueuedSamples, type QueuedSample } from '../runs/online-sample-records.js';
import { addWindowCases, openWindow } from './store/online-windows.js';
import type { SqlRunner } from './store/eval-runs.js';

/** Samples one transaction moves. */
const BATCH = 500;
/** Batches one job moves before it queues itself again (other tenants' intakes take their turn). */
const BATCHES_PER_JOB = 20;

/** The UTC day of a sample's run: the window it belongs to. */
const dayOf = (at: Date) => at.toISOString().slice(0, 10);

export interface IntakeOutcome {
  taken: number;
  scored: number;
  capped: number;
  /** Samples are left: the job should run again. */
  more: boolean;
}

/** Moves up to BATCHES_PER_JOB batches of the tenant's samples into their windows. */
export async function moveOnlineSamples(deps: AppDeps, tenantId: string): Promise<IntakeOutcome> {
  const outcome: IntakeOutcome = { taken: 0, scored: 0, capped: 0, more: false };
  for (let batch = 0; batch < BATCHES_PER_JOB; batch++) {
    const moved = await deps.sql.transaction(async (query) => moveBatch(deps, { query }, tenantId));
    outcome.taken += moved.taken;
    outcome.scored += moved.scored;
    outcome.capped += moved.capped;
    if (moved.taken < BATCH) return outcome;
  }
  outcome.more = true;
  return outcome;
}

async function moveBatch(deps: AppDeps, tx: SqlRunner, tenantId: string): Promise<{ taken: number; scored: number; capped: number }> {
  const samples = await takeQueuedSamples(tx, tenantId, BATCH);
  const groups = new Map<string, QueuedSample[]>();
  for (const sample of samples) {
    const key = `${sample.rule_id}|${dayOf(new Date(sample.created_at))}`;
    const list = groups.get(key) ?? [];
    list.push(sample);
    groups.set(key, list);
  }
  let scored = 0;
  let capped = 0;
  for (const [key, group] of groups) {
    const [ruleId, day] = key.split('|');
    const window = await openWindow(tx, { ruleId, tenantId, day, judgeModel: judgeModelOf(deps) });
    if (!window) continue; // the rule was deleted since: its samples went with it
    const room = Math.max(0, window.daily_cap - window.cases_total);
    const cases = group.slice(0, room).map((s) => ({
      input: s.input, output: s.output, source_kind: s.source_kind, source_id: s.source_id, latency_ms: s.latency_ms, cost_usd: s.cost_usd,
    }));
    await addWindowCases(tx, { runId: window.id, tenantId, from: window.cases_total, cases, expected: window.expected_output, capped: group.length - cases.length });
    if (cases.length) await enqueueWith(tx, evalRunJob, { run_id: window.id, tenant_id: tenantId });
    scored += cases.length;
    capped += group.length - cases.length;
  }
  observeOnlineSamples(scored, capped);
  return { taken: samples.length, scored, capped };
}

/**
 * How often each job runner looks for queued samples. Runs only write their samples (in their own
 * statement): queueing the intake from the API process cost a graphile-worker job write (~1.4 ms of
 * round trip) up to four times a second per tenant and process, on the runs' machine.
 */
export const ONLINE_INTAKE_POLL_MS = 1_000;

/** Queues the intake of every tenant with samples queued before `before` (the intake's own job key keeps one per tenant). */
async function queueIntakes(deps: AppDeps, before: Date): Promise<number> {
  const tenants = await listTenantsWithSamples(deps.sql, before, 1000);
  for (const tenantId of tenants) await enqueueWith(deps.sql, onlineEvalIntakeJob, { tenant_id: tenantId });
  return tenants.length;
}

/** A job runner's look for queued samples (every ONLINE_INTAKE_POLL_MS): answers how many tenants' intakes it queued. */
export function pollOnlineSamples(deps: AppDeps): Promise<number> {
  return queueIntakes(deps, new Date());
}

/** Queues the intake of every tenant whose samples waited past a minute (the crontab's sweep: no runner polled them). */
export async function sweepOnlineSamples(deps: AppDeps): Promise<void> {
  await queueIntakes(deps, new Date(Date.now() - 60_000));
}
