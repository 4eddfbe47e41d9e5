// Every graphile-worker task, declared once: its name, its payload, its job key and how many
// attempts it gets. Services enqueue through these contracts (server/jobs/store/job-queue.ts) and
// each worker task parses its payload with the same one, so the two sides cannot drift apart.
import { z } from 'zod';

export interface JobContract<P extends Record<string, unknown>> {
  /** The task name graphile-worker dispatches on. */
  readonly task: string;
  /** What a job carries: ids only; the work's state lives in our own tables. */
  readonly payload: z.ZodType<P>;
  readonly maxAttempts: number;
  /**
   * The job key: `prefix` followed by the payload's `field`. A pending job with the same key is
   * replaced (or kept, by the key mode the enqueuer asks for), so one piece of work has one job.
   */
  readonly key?: { readonly prefix: string; readonly field: keyof P & string };
  /**
   * A named queue (`prefix` followed by the payload's `field`): graphile-worker runs the jobs of one
   * queue one at a time, so one tenant's slow work holds one worker slot at most.
   */
  readonly queue?: { readonly prefix: string; readonly field: keyof P & string };
}

export type JobPayload<C> = C extends JobContract<infer P> ? P : never;

const runIds = { run_id: z.string(), tenant_id: z.string() };

/** Executes (or goes on with) one workflow run. */
export const workflowContinueJob = {
  task: 'workflow_continue',
  payload: z.object({
    ...runIds,
    /** Set by a wait's own job: the delay ended, or the approval's or callback's time ran out. */
    // json_build_object writes SQL nulls for the fields a wake does not use: they read as absent.
    wake: z.enum(['delay', 'approval', 'callback']).nullish().transform((v) => v ?? undefined),
    seq: z.number().int().nullish().transform((v) => v ?? undefined),
    approval_id: z.string().nullish(),
  }),
  maxAttempts: 10,
  key: { prefix: 'wf-run:', field: 'run_id' },
} as const satisfies JobContract<Record<string, unknown>>;

/**
 * The timer of a waiting run (a delay, an approval's or a callback's timeout): the same task
 * under its own key, so it never replaces nor is replaced by the run's continue job.
 */
export const workflowWakeJob = { ...workflowContinueJob, key: { prefix: 'wf-wake:', field: 'run_id' } } as const;

/** Delivers a finished async run's result to its callback_url. */
export const workflowCallbackJob = {
  task: 'workflow_callback',
  payload: z.object({
    ...runIds,
    /**
     * The W3C trace context (traceparent, tracestate) of the run's end, which the delivery continues
     * (null when not traced): telemetry, not the work's state, which stays in the run's row.
     */
    trace_context: z.record(z.string(), z.string()).nullish(),
  }),
  maxAttempts: 6,
  key: { prefix: 'wf-callback:', field: 'run_id' },
} as const satisfies JobContract<Record<string, unknown>>;

/** One tick of a schedule-triggered workflow: starts its run and queues the next tick. */
export const workflowScheduleJob = {
  task: 'workflow_schedule',
  payload: z.object({ workflow_id: z.string(), tenant_id: z.string(), tick: z.string() }),
  maxAttempts: 5,
  key: { prefix: 'wf-schedule:', field: 'workflow_id' },
} as const satisfies JobContract<Record<string, unknown>>;

/** One time slice of an evaluation run; the next slice is a new job under the same key. */
export const evalRunJob = {
  task: 'eval_run',
  payload: z.object(runIds),
  maxAttempts: 25,
  key: { prefix: 'eval-run:', field: 'run_id' },
} as const satisfies JobContract<Record<string, unknown>>;

/** Ingests one document (ingestion_jobs holds its state, so a repeated run is harmless). */
export const ingestDocumentJob = {
  task: 'ingest_document',
  payload: z.object({ jobId: z.string() }),
  // Transient failures, such as a provider outage, are retried.
  maxAttempts: 5,
  key: { prefix: '', field: 'jobId' },
} as const satisfies JobContract<Record<string, unknown>>;

/**
 * Delivers a tenant's due events to its subscriptions (server/events/deliver-events.ts). One job per
 * tenant (its key), in the tenant's own queue: the database triggers that record an event queue it
 * in the same transaction; a run that leaves deliveries waiting for a retry queues the next one.
 */
export const deliverEventsJob = {
  task: 'deliver_events',
  payload: z.object({ tenant_id: z.string() }),
  maxAttempts: 25,
  key: { prefix: 'events:', field: 'tenant_id' },
  queue: { prefix: 'events:', field: 'tenant_id' },
} as const satisfies JobContract<Record<string, unknown>>;

/**
 * Moves a tenant's sampled production runs into their rules' live windows (server/evals/online-intake.ts)
 * and queues each window's scoring (an eval_run job). One job per tenant (its key), in the tenant's
 * own queue; a sampled run queues it (at most a few times a second per process).
 */
export const onlineEvalIntakeJob = {
  task: 'online_eval_intake',
  payload: z.object({ tenant_id: z.string() }),
  maxAttempts: 10,
  key: { prefix: 'online-eval:', field: 'tenant_id' },
  queue: { prefix: 'online-eval:', field: 'tenant_id' },
} as const satisfies JobContract<Record<string, unknown>>;

/** Queues the intake of every tenant whose samples waited past a minute (a kick a crash lost); run by the worker's crontab. */
export const onlineEvalSweepJob = {
  task: 'online_eval_sweep',
  payload: z.object({}),
  maxAttempts: 3,
} as const satisfies JobContract<Record<string, unknown>>;

/** Sends one outbox message. */
export const sendMailJob = {
  task: 'send_mail',
  payload: z.object({ messageId: z.string() }),
  maxAttempts: 10,
} as const satisfies JobContract<Record<string, unknown>>;

/** Deletes expired sessions, tokens and keys; run hourly by the worker's crontab. */
export const pruneExpiredJob = {
  task: 'prune_expired',
  payload: z.object({}),
  maxAttempts: 10,
} as const satisfies JobContract<Record<string, unknown>>;

/**
 * Deletes history past each tenant's retention and keeps the monthly partitions (made ahead, old
 * months dropped); run hourly by the worker's crontab. One run at a time (an advisory lock).
 */
export const enforceRetentionJob = {
  task: 'enforce_retention',
  payload: z.object({}),
  maxAttempts: 5,
} as const satisfies JobContract<Record<string, unknown>>;
