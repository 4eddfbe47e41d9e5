// Executes an evaluation run on the job runner, case by case: the intent runs for real (or the
// supplied response is taken) -> the deterministic check -> the judge -> the custom scorer. Each case
// is written when it is done (its result with its judge's calls and cost, the judge's usage and the
// case's trace rows in one statement), so a run interrupted anywhere goes on with the cases not
// written yet and never scores a case twice. The run's counters, progress and stage are recomputed
// from its results at most every PROGRESS_MS and whenever its status changes.
//
// A job works on a run for a time slice, then queues itself again when another job waits for a
// slot: runs of several tenants take turns on the job runner's slots. Cases run EVAL_CONCURRENCY at a time per run, and one tenant's
// runs share as many slots per process, so one tenant's 5,000-case run does not hold everything.
//
// A provider failure that time may cure (a rate limit, an outage) does not fail the run: the case
// waits and tries again (llm/ride-out.ts), the slice's limiter lets fewer cases call the provider
// at once, and the run's stage says that it waits. A case still failing after PROVIDER_PATIENCE_MS
// is errored with the provider's code and reason, and the run goes on with the others.
import type { EntityManager } from '../../db/orm.js';
import { monthKey } from '../common/schemas.js';
import type { AppDeps } from '../deps.js';
import { AppError } from '../errors.js';
import type { IntentDefinition } from '../intents/intent-definition.js';
import { recordRunEnded, withRunContext } from '../observability/telemetry.js';
import { draftIntentDefinition, resolveIntent, type DraftIntent } from '../intents/resolve-intent.js';
import { runIntentForCase, type CaseInputScan } from '../intents/run-intent.service.js';
import { readRunContext } from '../intents/run-context.js';
import type { StoredProviderKey } from '../llm/llm.types.js';
import { transientProviderFailure, type ProviderFailureReason } from '../llm/provider-errors.js';
import { parseModelRef } from '../llm/providers.js';
import { createAdaptiveLimiter, rideOut, RideOutAborted, type AdaptiveLimiter } from '../llm/ride-out.js';
import { limitsForPlan } from '../tenants/plan-limits.js';
import { toTenantRuntime, type TenantRuntime } from '../tenants/tenant-runtime.js';
import type { MonthlyUsage, UsageEventInput } from '../usage/usage.service.js';
import { caseInputOf, scansAhead } from './case-scans.js';
import { checkOutput, type CheckResult } from './check-output.js';
import { runCustomScorer, ScorerError, type CustomScorer } from './custom-scorer.js';
import { closeTenantSpend, openJudgeBudget, type TenantSpend } from './judge-budget.js';
import { judgeRuleMonitors } from './monitors.js';
import { judgeAnswer, type JudgeVerdict } from './judge.js';
import { countPendingResults, listPendingResults, writeCaseResult, type CaseResultWrite, type PendingCase } from './store/eval-results.js';
import { claimRun, completeRun, isJobWaiting, markRunFailed, settleRunCounters, updateRunCounters, type ClaimedRun } from './store/eval-runs.js';
import { scorerWebhookSecret } from './suites.service.js';

/** How long one job works on a run before it queues itself again. */
export const EVAL_SLICE_MS = 15_000;
/**
 * Longest a job works on a run when no other job waits: it is then queued again all the same, so a
 * job's lock never grows old (a run of hours is many jobs).
 */
const EVAL_JOB_MAX_MS = 10 * 60_000;
/**
 * How often a running run's counters, progress and stage are written (recomputed from its results,
 * by the worker that finishes a case once this long has passed; at the end they are exact).
 */
const PROGRESS_MS = 250;
/** Pending cases read per round. */
const BATCH = 500;

/**
 * Errors of the platform, not of a case: the run fails (and can be resumed) instead of erroring
 * every case. A provider failure time may cure is not one of them: the case rides it out, and
 * errors alone when the provider outlasts the patience (the run goes on).
 */
const RUN_LEVEL_ERRORS = new Set(['LLM_PROVIDER_ERROR', 'LLM_NOT_CONFIGURED', 'QUOTA_EXCEEDED', 'DOMAIN_NOT_ENABLED', 'INTENT_NOT_PERMITTED', 'NOT_FOUND']);
const isRunLevel = (err: unknown) => err instanceof AppError && RUN_LEVEL_ERRORS.has(err.code) && !transientProviderFailure(err);

/** What a running run's stage adds while its cases wait for the provider, by the failure's reason. */
const WAITING_FOR: Partial<Record<ProviderFailureReason, string>> = {
  rate_limited: 'rate limited', server_error: 'server errors', timeout: 'timing out', connection: 'unreachable', circuit_open: 'cooling down',
};
const waitingNote = (reason: ProviderFailureReason | null) => (reason ? `waiting for the provider (${WAITING_FOR[reason] ?? 'failing'})` : null);

class RunFailure extends Error {
  constructor(readonly code: string, message: string) {
    super(message);
  }
}

// ---- Per-tenant slots ---------------------------------------------------------------------------

const tenantSlots = new Map<string, { active: number; waiting: (() => void)[] }>();

async function withTenantSlot<T>(tenantId: string, limit: number, work: () => Promise<T>): Promise<T> {
  let slot = tenantSlots.get(tenantId);
  if (!slot) tenantSlots.set(tenantId, (slot = { active: 0, waiting: [] }));
  if (slot.active >= limit) await new Promise<void>((resolve) => slot.waiting.push(resolve));
  slot.active++;
  try {
    return await work();
  } finally {
    slot.active--;
    const next = slot.waiting.shift();
    if (next) next();
    else if (slot.active === 0) tenantSlots.delete(tenantId);
  }
}

// ---- Writes -------------------------------------------------------------------------------------

/** What a case writes, with the check and the verdict as the run produced them. */
type CaseWrite = CaseResultWrite & { check: CheckResult | null; verdict: JudgeVerdict | null };

/** Writes the case; answers the run's status after it, and keeps the month's usage it answered for the next quota check. */
async function writeCase(ctx: RunContext, c: PendingCase, w: CaseWrite): Promise<string | null> {
  const written = await writeCaseResult(ctx.deps.sql, ctx.run, c.id, w);
  if (written.usage) ctx.usage = laterUsage(ctx.usage, written.usage);
  return written.runStatus;
}

/**
 * The later of two readings of the tenant's month: case writes answer in any order, and a new
 * month starts from its own reading.
 */
function laterUsage(known: MonthUsage, read: { month: string; requests: number; tokens: number }): MonthUsage {
  if (read.month !== known.month) return read.month > known.month ? { ...read, costUsd: 0 } : known;
  return { month: known.month, requests: Math.max(known.requests, read.requests), tokens: Math.max(known.tokens, read.tokens), costUsd: known.costUsd };
}

// ---- One case -----------------------------------------------------------------------------------

interface RunContext {
  deps: AppDeps;
  em: EntityManager;
  run: ClaimedRun;
  tenant: TenantRuntime;
  intent: IntentDefinition | null;
  task: string;
  scorer: CustomScorer | null;
  budget: { limit: number | null; spend: TenantSpend; capReached: boolean };
  /** The tenant's own key for the judge's provider (encryptedKey null: none), so no case looks it up. */
  judgeKey: StoredProviderKey;
  /**
   * The tenant's usage this month, the intent runs' quota check: read when the slice opens, then
   * as each case write answers it (that write moved the counter: it sees every run's use so far).
   */
  usage: MonthUsage;
}

type MonthUsage = MonthlyUsage & { month: string };

/** How a slice's cases ride out the provider's transient failures: one limiter for the slice. */
interface ProviderPatience {
  limiter: AdaptiveLimiter;
  patienceMs: number;
  /** Aborted when the slice stops: a waiting case is then left pending for the next slice. */
  signal: AbortSignal;
  onWait: () => void;
}

const codeOf = (err: unknown) => (err instanceof AppError ? err.code : 'INTERNAL_ERROR');
const describe = (err: unknown) => {
  const transient = transientProviderFailure(err);
  const message = `${codeOf(err)}: ${err instanceof Error ? err.message : String(err)}`;
  return transient ? `${message} (reason: ${transient.reason}; the provider still failed when the run stopped waiting for it)` : message;
};

/**
 * Scores one case, with the slice's entity manager: the case path only reads through it (Kysely, no
 * identity map: retrieval, a key not read with the claim; a failed call's usage is written through
 * its own transactional fork), and a fork per case cost about 50 us of main-thread CPU.
 */
async function scoreCase(ctx: RunContext, c: PendingCase, provider: ProviderPatience, scanned?: Promise<CaseInputScan | null>): Promise<CaseWrite> {
  const { deps, run, em } = ctx;
  const patiently = <T>(call: () => Promise<T>) => rideOut(call, provider);
  const started = performance.now();
  const steps: CaseWrite['steps'] = [];
  const base = { check: null, verdict: null, customScore: null, judgeUsage: [] as UsageEventInput[], intentUsage: [] as UsageEventInput[], judgeFailures: 0, steps };
  let output: unknown = c.output;
  let intentCost = 0;
  if (run.execution_mode === 'liya_intent') {
    const t0 = performance.now();
    const at = new Date();
    try {
      const input = caseInputOf(c);
      const res = await patiently(() =>
        runIntentForCase(em, deps, { tenantId: run.tenant_id, environmentId: run.environment_id, plan: run.billing_plan, tenant: ctx.tenant }, input, {
          intent: ctx.intent!, model: run.model_override, usedThisMonth: ctx.usage, providerKeys: run.provider_keys, scanned,
        }));
      output = res.output;
      intentCost = res.costUsd;
      // Metered by the case's statement, whatever the rest of the case does.
      base.intentUsage = res.usage;
      steps.push({ name: `${run.domain_key}/${run.intent_key}`, type: 'intent', status: 'completed', costUsd: intentCost, promptTokens: res.tokens, completionTokens: 0, latencyMs: performance.now() - t0, error: null, startedAt: at });
    } catch (err) {
      if (err instanceof RideOutAborted) throw err;
      if (isRunLevel(err)) throw new RunFailure(codeOf(err), err instanceof Error ? err.message : String(err));
      steps.push({ name: `${run.domain_key}/${run.intent_key}`, type: 'intent', status: 'failed', costUsd: 0, promptTokens: 0, completionTokens: 0, latencyMs: performance.now() - t0, error: describe(err), startedAt: at });
      return { ...base, status: 'errored', output: null, passed: false, latencyMs: performance.now() - started, costUsd: 0, error: describe(err) };
    }
  }
  const check = checkOutput(c.expected_output, output);
  if (ctx.budget.limit !== null && ctx.budget.spend.spent >= ctx.budget.limit) {
    ctx.budget.capReached = true;
    return { ...base, check, status: 'skipped', output, passed: null, latencyMs: performance.now() - started, costUsd: intentCost, error: 'JUDGE_CAP_REACHED: the monthly judge budget ran out before this case was judged' };
  }
  const judgeUsage: UsageEventInput[] = [];
  const sink = (event: UsageEventInput) => judgeUsage.push({ ...event, countsAsRequest: false });
  const judgeCost = () => judgeUsage.reduce((sum, u) => sum + (u.costUsd ?? 0), 0);
  const t1 = performance.now();
  const judgedAt = new Date();
  let verdict: JudgeVerdict;
  try {
    verdict = (await patiently(() => judgeAnswer(em, deps, {
      tenantId: run.tenant_id, environmentId: run.environment_id, model: run.judge_model, task: ctx.task, input: c.input, message: c.message,
      fallbackModels: run.judge_fallback_models ?? ctx.tenant.modelFallbacks,
      expected: c.expected_output, answer: output, rubric: run.judge_rubric, usageSink: sink, storedKey: ctx.judgeKey,
      usageKind: run.execution_mode === 'online' ? 'online_judge' : 'eval_judge',
    }))).verdict;
  } catch (err) {
    ctx.budget.spend.spent += judgeCost();
    if (err instanceof RideOutAborted) throw err;
    if (isRunLevel(err)) throw new RunFailure(codeOf(err), err instanceof Error ? err.message : String(err));
    const judgeSteps = judgeUsage.map((u) => ({ name: 'judge', type: 'judge', status: 'failed', costUsd: u.costUsd ?? 0, promptTokens: u.promptTokens ?? 0, completionTokens: u.completionTokens ?? 0, latencyMs: u.latencyMs ?? 0, error: describe(err), startedAt: judgedAt }));
    return {
      ...base, steps: [...steps, ...judgeSteps.slice(0, 3)], check, judgeUsage, judgeFailures: 1, status: 'errored', output, passed: false,
      latencyMs: performance.now() - started, costUsd: intentCost + judgeCost(), error: `JUDGE_FAILED: ${describe(err)}`,
    };
  }
  ctx.budget.spend.spent += judgeCost();
  const judgeTokens = judgeUsage.reduce((sum, u) => ({ p: sum.p + (u.promptTokens ?? 0), c: sum.c + (u.completionTokens ?? 0) }), { p: 0, c: 0 });
  steps.push({ name: 'judge', type: 'judge', status: 'completed', costUsd: judgeCost(), promptTokens: judgeTokens.p, completionTokens: judgeTokens.c, latencyMs: performance.now() - t1, error: null, startedAt: judgedAt });
  let customScore: number | null = null;
  if (ctx.scorer) {
    const t2 = performance.now();
    const scoredAt = new Date();
    try {
      customScore = await runCustomScorer(deps, ctx.scorer, { runId: run.id, caseId: c.case_id, input: c.input, output, expected: c.expected_output, judge: verdict });
      steps.push({ name: 'custom scorer', type: 'scorer', status: 'completed', costUsd: 0, promptTokens: 0, completionTokens: 0, latencyMs: performance.now() - t2, error: null, startedAt: scoredAt });
    } catch (err) {
      const message = err instanceof ScorerError ? `SCORER_FAILED: ${err.message}` : describe(err);
      steps.push({ name: 'custom scorer', type: 'scorer', status: 'failed', costUsd: 0, promptTokens: 0, completionTokens: 0, latencyMs: performance.now() - t2, error: message, startedAt: scoredAt });
      return { ...base, check, verdict, judgeUsage, status: 'errored', output, passed: false, latencyMs: performance.now() - started, costUsd: intentCost + judgeCost(), error: message };
    }
  }
  const passed = check.passed !== false && verdict.score >= Number(run.pass_threshold);
  return { ...base, check, verdict, customScore, judgeUsage, status: 'scored', output, passed, latencyMs: performance.now() - started, costUsd: intentCost + judgeCost(), error: null };
}

// ---- The run ------------------------------------------------------------------------------------

async function failRun(deps: AppDeps, runId: string, code: string, message: string) {
  await markRunFailed(deps.sql, runId, { code, message: message.slice(0, 2000) });
}

/** The run ended (in this slice): its outcome and its whole duration, from its start, for the metrics. */
function reportRunEnd(run: ClaimedRun, outcome: string) {
  recordRunEnded({ kind: 'eval', tenantId: run.tenant_id, runId: run.id, name: run.name }, outcome, Date.now() - new Date(run.started_at).getTime());
}

/** Ends a run whose cases are all written: means over the scored cases, progress 100. */
async function finishRun(deps: AppDeps, run: ClaimedRun, capReached: boolean) {
  await completeRun(deps.sql, run.id, capReached);
  reportRunEnd(run, 'completed');
}

async function scorerOf(ctx: { em: EntityManager; deps: AppDeps }, run: ClaimedRun): Promise<CustomScorer | null> {
  if (run.custom_scorer_expression) {
    return { kind: 'expression', source: run.custom_scorer_expression, limits: limitsForPlan(run.billing_plan, ctx.deps.config.PLAN_LIMITS) };
  }
  if (run.custom_scorer_webhook_url && run.custom_scorer_webhook_secret && run.suite_id) {
    const secret = await scorerWebhookSecret(ctx.em, ctx.deps, run.tenant_id, run.suite_id, run.custom_scorer_webhook_secret);
    if (secret) return { kind: 'webhook', url: run.custom_scorer_webhook_url, secret };
  }
  return null;
}

/**
 * The job's last attempt ended in an unexpected error: the run fails (and can be resumed) instead of
 * staying `running` with no job left to move it.
 */
export async function giveUpEvalRun(deps: AppDeps, runId: string, err: unknown) {
  // The cause goes to the log, not to the tenant: it is the platform's (a database error, say).
  deps.log.error({ err, run: runId }, 'evaluation run gave up after its last attempt');
  await failRun(deps, runId, 'INTERNAL_ERROR', 'The run stopped after repeated unexpected errors; resume it to try again');
}

export interface EvalJobControl {
  /** Queues the run's job again (the next time slice). */
  requeue(): Promise<void>;
}

/** One time slice of a run (the job `eval_run`). */
export async function executeEvalRun(deps: AppDeps, payload: { run_id: string; tenant_id: string }, control: EvalJobControl): Promise<void> {
  const run = await claimRun(deps.sql, payload.run_id, payload.tenant_id);
  if (!run) return;
  // A run is served in time slices (one job each): each slice is a span and carries the run in its logs.
  await withRunContext({ kind: 'eval', tenantId: run.tenant_id, runId: run.id, name: run.name }, () => executeEvalSlice(deps, run, control));
}

type SliceRun = NonNullable<Awaited<ReturnType<typeof claimRun>>>;

/**
 * What a slice reads once and keeps for its cases: the intent (resolved once), the task the judge
 * is told, the scorer, the tenant's judge budget and spend, and the judge's provider key. Null when
 * the intent is gone (the run failed).
 */
async function openRunContext(deps: AppDeps, em: EntityManager, run: SliceRun): Promise<RunContext | null> {
  const tenant = toTenantRuntime(run);
  let intent: IntentDefinition | null = null;
  if (run.execution_mode === 'liya_intent') {
    try {
      intent = run.intent_definition
        ? draftIntentDefinition(run.domain_key!, run.intent_key!, run.intent_definition as unknown as DraftIntent)
        : await resolveIntent(em, tenant, run.domain_key!, run.intent_key!);
    } catch (err) {
      if (!(err instanceof AppError)) throw err;
      await failRun(deps, run.id, err.code, err.message);
      reportRunEnd(run, 'failed');
      return null;
    }
  }
  const judgeProvider = parseModelRef(run.judge_model).provider;
  const scorer = await scorerOf({ em, deps }, run);
  const { limit, spend } = await openJudgeBudget(deps.sql, run);
  const month = monthKey();
  const usage = run.execution_mode === 'liya_intent' ? (await readRunContext(deps.sql, run.tenant_id, judgeProvider, null)).usedThisMonth : { requests: 0, tokens: 0, costUsd: 0 };
  return {
    deps, em, run, tenant, intent, scorer,
    task: intent ? `${intent.displayName}: ${intent.description ?? ''}`.trim() : 'Answer the input as a helpful assistant would.',
    budget: { limit, spend, capReached: false },
    judgeKey: { provider: judgeProvider, encryptedKey: run.provider_keys?.[judgeProvider] ?? null },
    usage: { ...usage, month },
  };
}

async function executeEvalSlice(deps: AppDeps, run: SliceRun, control: EvalJobControl): Promise<void> {
  const ctx = await openRunContext(deps, deps.orm.em.fork(), run);
  if (!ctx) return;
  try {
    await workSlice(ctx, control);
  } finally {
    closeTenantSpend(ctx.budget.spend);
  }
  // A live window's new scores: its rule's monitors look again (a failure here is the monitors'
  // alone: the cases are written, and the next slice judges again).
  if (run.online_rule_id) await judgeRuleMonitors(deps, run.online_rule_id).catch((err: unknown) => deps.log.error({ err, rule: run.online_rule_id }, 'judging the monitors failed'));
}

/**
 * Scores pending cases until the slice's turn is over, the run stops, or they are all written.
 *
 * Every EVAL_SLICE_MS the slice gives its job slot back only when another job is waiting for one:
 * it then stops taking cases, lets those in flight finish and queues the run again. Otherwise it
 * goes on, re-reading what a new slice would (the run's claim: its status, the tenant's plan and
 * provider keys; the intent; this month's judge spend), without letting its workers run dry — a
 * yield drains the cases in flight and waits for the job to be picked up again, which cost a run
 * about a second of idle model slots each time.
 */
async function workSlice(ctx: RunContext, control: EvalJobControl): Promise<void> {
  const { deps, run } = ctx;
  const concurrency = deps.config.EVAL_CONCURRENCY;
  // Set by the workers: the run stopped being `running` (cancelled), a platform error failed it, or
  // something unexpected broke (the database): then every worker stops before the job is retried,
  // so a retry never runs beside workers of this attempt. `yielding`: the slice's turn is over.
  const state: { stopped: boolean; failure: RunFailure | null; broken: unknown; yielding: boolean; ended: boolean } = {
    stopped: false, failure: null, broken: null, yielding: false, ended: false,
  };
  const goOn = () => !state.stopped && !state.failure && !state.broken && !ctx.budget.capReached && !state.yielding;
  const startedAt = Date.now();
  let turn: NodeJS.Timeout | undefined;
  const endOfTurn = async () => {
    try {
      if (state.ended || !goOn()) return;
      if (Date.now() - startedAt + EVAL_SLICE_MS > EVAL_JOB_MAX_MS || (await isJobWaiting(deps.sql))) {
        state.yielding = true;
        return;
      }
      const fresh = await claimRun(deps.sql, run.id, run.tenant_id);
      if (state.ended) return;
      if (!fresh) {
        state.stopped = true;
        return;
      }
      const next = await openRunContext(deps, deps.orm.em.fork(), fresh);
      if (!next) {
        state.stopped = true;
        return;
      }
      if (state.ended) {
        closeTenantSpend(next.budget.spend);
        return;
      }
      // The workers read these per case: the cases started from now on use what was just read.
      const previous = ctx.budget;
      Object.assign(ctx, { run: fresh, tenant: next.tenant, intent: next.intent, task: next.task, scorer: next.scorer, judgeKey: next.judgeKey, em: next.em, usage: laterUsage(ctx.usage, next.usage) });
      ctx.budget = { ...next.budget, capReached: previous.capReached };
      closeTenantSpend(previous.spend);
      turn = setTimeout(() => void endOfTurn(), EVAL_SLICE_MS);
    } catch (err) {
      state.broken ??= err;
    }
  };
  turn = setTimeout(() => void endOfTurn(), EVAL_SLICE_MS);
  // The run's progress, written beside the cases rather than by each of them.
  // A recount reads all the run's results: the wait between two grows with what the last one cost
  // (at most 1 part in 20 of the time), so a run of 20,000 cases does not spend its time recounting.
  // A case starting to wait writes at once (`force`), so the stage says so without delay.
  const limiter = createAdaptiveLimiter(concurrency);
  let progressAt = Date.now();
  let progressEvery = PROGRESS_MS;
  let progress: Promise<void> | null = null;
  let forced = false;
  const reportProgress = (force = false) => {
    if (state.ended) return;
    if (progress) {
      forced ||= force;
      return;
    }
    if (!force && Date.now() - progressAt < progressEvery) return;
    progressAt = Date.now();
    progress = updateRunCounters(deps.sql, run.id, waitingNote(limiter.waitingFor()))
      .then((status) => {
        progressEvery = Math.max(PROGRESS_MS, 20 * (Date.now() - progressAt));
        if (status !== 'running') state.stopped = true;
      }, (err: unknown) => {
        state.broken ??= err;
      })
      .finally(() => {
        progress = null;
        if (forced) {
          forced = false;
          reportProgress(true);
        }
      });
  };
  // While cases wait for the provider, nothing else writes or reads the run: a watch keeps the
  // stage current, sees a cancel (through that write) and ends the waits when the slice stops.
  const waits = new AbortController();
  let waited = false;
  const watch = setInterval(() => {
    if (!goOn()) return waits.abort();
    const waiting = limiter.waitingFor() !== null;
    // The last wait over: the stage stops saying it at once, not at the next case written.
    if (waiting || waited) reportProgress(waited && !waiting);
    waited = waiting;
  }, PROGRESS_MS);
  const provider: ProviderPatience = { limiter, patienceMs: deps.config.PROVIDER_PATIENCE_MS, signal: waits.signal, onWait: () => reportProgress(true) };
  try {
    while (goOn()) {
      const pending = await listPendingResults(deps.sql, run.id, BATCH);
      if (!pending.length) break;
      let next = 0;
      const scans = scansAhead(ctx, pending);
      const worker = async () => {
        while (goOn() && next < pending.length) {
          const index = next++;
          const c = pending[index]!;
          await withTenantSlot(run.tenant_id, concurrency, async () => {
            if (!goOn()) return;
            try {
              const write = await scoreCase(ctx, c, provider, scans.take(index));
              const status = await writeCase(ctx, c, write);
              if (status !== 'running') state.stopped = true;
              else reportProgress();
            } catch (err) {
              // A case whose wait the slice's end cut short stays pending: the next slice runs it.
              if (err instanceof RideOutAborted) return;
              if (err instanceof RunFailure) state.failure ??= err;
              else state.broken ??= err;
            }
          });
        }
      };
      await Promise.all(Array.from({ length: Math.min(concurrency, pending.length) }, worker));
    }
  } finally {
    state.ended = true;
    clearTimeout(turn);
    clearInterval(watch);
    await progress;
  }
  if (state.broken) throw state.broken;
  // Each of these sets the counters from the results, now that every case of the slice is written.
  if (state.failure) {
    await failRun(deps, run.id, state.failure.code, state.failure.message);
    return reportRunEnd(run, 'failed');
  }
  if (state.stopped) return settleRunCounters(deps.sql, run.id);
  const left = await countPendingResults(deps.sql, run.id);
  if (left > 0 && !ctx.budget.capReached) {
    await updateRunCounters(deps.sql, run.id);
    return control.requeue();
  }
  await finishRun(deps, run, ctx.budget.capReached);
}
