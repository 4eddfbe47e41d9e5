// What each step type does. A step gets the run's scope (trigger, earlier steps, state, run) and
// answers its output and where the run goes next; it never writes the run's progress itself.
import { randomUUID } from 'node:crypto';
import type { EntityManager } from '../../../db/orm.js';
import type { TenantScope } from '../../tenants/tenant-scope.js';
import { parseIntentRef } from '../../intents/intent-ref.js';
import type { AppDeps } from '../../deps.js';
import { sendTenantMail } from '../../mail/send-tenant-mail.js';
import { readLimited } from '../../net/signed-webhook.js';
import { runIntent } from '../../intents/run-intent.service.js';
import { enterNestedRun, type RunLineage } from '../../runs/run-lineage.js';
import { LimitExceededError } from '../../tenants/plan-limits.js';
import { compileExpression } from '../expressions.js';
import { MAX_LOOP_NESTING } from '../validate-definition.js';
import { revealStepSecrets } from '../step-secrets.js';
import type { StepDef } from '../step-types.js';
import type { RunGuard } from './run-guard.js';
import type { Resume, WaitKind } from './run-types.js';
import { renderTemplate } from '../../common/templates.js';
import { findCustomIntentKeys } from '../../intents/intent-records.js';
import { takeEarlyCallback } from '../store/run-step-writes.js';
import { readStateValue, setState, type StateKey } from '../store/workflow-state.js';

export interface StepContext {
  em: EntityManager;
  deps: AppDeps;
  scope: TenantScope;
  workflow: { id: string; key: string };
  run: { id: string; conversationId: string; scope: 'live' | 'test' };
  state: StateKey;
  /** trigger, steps, state, run (and loop inside a loop body): what templates and expressions read. */
  vars: Record<string, unknown>;
  byId: Map<string, StepDef>;
  /** Each step's successor by step_order (null for the last). */
  nextOf: Map<string, string | null>;
  /** How the step the run waited at goes on (the answer, decision, delay's end or callback). */
  resume: Resume | null;
  /** The index of the step's row in the run (part of the Idempotency-Key of HTTP requests). */
  stepIndex: number;
  /** Which callback wait of the run comes next (its token names it). */
  callbackSeq: number;
  /** Inside a loop body: the iteration. */
  loopIndex?: number;
  /** Loops this step runs inside (a loop whose body is a loop ...). */
  loopDepth?: number;
  /** The run's limits while it executes: steps, sizes, time, cancellation. */
  guard: RunGuard;
  /** Where the run stands in a tree of nested runs (its depth, the tree's budget and deadline). */
  lineage: RunLineage;
}

/** A step that waits: the run stops here until something stores a `Resume` for it. */
export interface StepWait {
  kind: WaitKind;
  /** When a job wakes the run: a delay's end, or an approval's or callback's timeout. */
  wakeAt?: Date;
  approvalId?: string;
  /** The approval's step (a loop's body step when the approval is inside a loop). */
  approvalStepId?: string;
  loopIndex?: number;
  message?: string;
}

export interface StepResult {
  output: unknown;
  /** The step chose its successor (condition, switch); undefined: the usual on_success / order rule. */
  next?: string | null;
  /** The run waits here; the step runs again when the wait ends. */
  wait?: StepWait;
  /** An end step: the run's output. */
  end?: boolean;
  /** The run ends with this status (a rejected approval without on_failure). */
  endStatus?: 'rejected';
}

/** The stored resume when it is for this step and this kind of wait. */
const resumeFor = (step: StepDef, ctx: StepContext, kind: WaitKind) => (ctx.resume?.stepId === step.id && ctx.resume.kind === kind ? ctx.resume : null);

const config = <T = unknown>(step: StepDef, key: string) => step.config[key] as T;

/** Characters of a log step's message written to the process log (its output keeps the whole message). */
const LOG_STEP_MAX_CHARS = 2000;

/** The step's `{{...}}` templates filled in, within the plan's expression_result_size. */
const fill = (value: unknown, ctx: StepContext) => renderTemplate(value, ctx.vars, ctx.guard.limits);

/** A CEL expression of the step, within the plan's expression_ms and expression_result_size. */
function evaluate(source: string, ctx: StepContext): unknown {
  const compiled = compileExpression(source);
  if (!compiled.ok) throw new Error(`the expression does not compile: ${compiled.error}`);
  return compiled.evaluate(ctx.vars as never, ctx.guard.limits);
}

async function httpRequest(stored: StepDef, ctx: StepContext): Promise<StepResult> {
  // The step's credentials are decrypted only here, for the request itself.
  const step = await revealStepSecrets(ctx.em, ctx.deps, ctx.scope.tenantId, stored);
  const c = fill(step.config, ctx) as { method?: string; url: string; headers?: Record<string, unknown>; body?: unknown; timeout_ms?: number };
  const method = (c.method ?? 'GET').toUpperCase();
  const headers: Record<string, string> = Object.fromEntries(Object.entries(c.headers ?? {}).map(([k, v]) => [k, typeof v === 'string' ? v : JSON.stringify(v)]));
  // The same for a repeat of this very step (a run continued after a crash), so a receiver can drop it.
  if (!Object.keys(headers).some((h) => h.toLowerCase() === 'idempotency-key')) {
    headers['Idempotency-Key'] = `${ctx.run.id}:${step.id}:${ctx.stepIndex}${ctx.loopIndex !== undefined ? `:${ctx.loopIndex}` : ''}`;
  }
  let body: string | undefined;
  if (c.body !== undefined && c.body !== null && method !== 'GET' && method !== 'HEAD') {
    body = typeof c.body === 'string' ? c.body : JSON.stringify(c.body);
    if (typeof c.body !== 'string' && !Object.keys(headers).some((h) => h.toLowerCase() === 'content-type')) headers['content-type'] = 'application/json';
  }
  const timeout = c.timeout_ms ?? ctx.deps.config.OUTBOUND_TIMEOUT_MS;
  // The run's own end (its time limit, a cancel from the run above) ends the call too.
  const signal = AbortSignal.any([AbortSignal.timeout(timeout), ctx.guard.signal]);
  const res = await ctx.deps.outbound.fetch(String(c.url), { method, headers, body, signal });
  const { text, truncated } = await readLimited(res, ctx.deps.config.OUTBOUND_MAX_BYTES);
  let parsed: unknown = text;
  if ((res.headers.get('content-type') ?? '').includes('json') && !truncated) {
    try {
      parsed = JSON.parse(text);
    } catch {
      parsed = text;
    }
  }
  const output = { status: res.status, headers: { 'content-type': res.headers.get('content-type') }, body: parsed, truncated };
  if (res.status >= 400) throw Object.assign(new Error(`the server answered HTTP ${res.status}`), { output });
  return { output };
}

async function runAction(step: StepDef, ctx: StepContext): Promise<StepResult> {
  switch (step.action_id) {
    case 'http_request':
      return httpRequest(step, ctx);
    case 'set_state': {
      const key = String(fill(config(step, 'key'), ctx));
      const value = fill(config(step, 'value'), ctx);
      // Sized before it is saved: a value over a step's output would fail the step after the write.
      ctx.guard.outputSize(value, 'the value');
      await setState(ctx.deps.sql, ctx.state, key, value, config<number | undefined>(step, 'ttl_seconds') ?? null);
      (ctx.vars.state as Record<string, unknown>)[key] = value;
      return { output: { key, value } };
    }
    case 'get_state': {
      const key = String(fill(config(step, 'key'), ctx));
      const { found, value } = await readStateValue(ctx.deps.sql, ctx.state, key);
      return { output: { key, value, found } };
    }
    case 'transform':
      return { output: fill(config(step, 'output'), ctx) };
    case 'send_email': {
      const c = fill(step.config, ctx) as { to: unknown; subject: unknown; body: unknown };
      const sender = { tenantId: ctx.scope.tenantId, plan: ctx.scope.plan, limits: ctx.guard.limits };
      try {
        const sent = await sendTenantMail(ctx.em.fork(), ctx.deps, sender, { to: c.to, subject: c.subject, body: c.body, kind: 'workflow_email' });
        return { output: { queued: true, to: sent.to, recipients: sent.recipients } };
      } catch (err) {
        // The failed step's output names the limit, so an on_failure branch can tell a used-up quota from a bad address.
        if (err instanceof LimitExceededError) throw Object.assign(err, { output: err.toDetails() });
        throw err;
      }
    }
    case 'wait_for_callback':
      return waitForCallback(step, ctx);
    case 'log': {
      const message = fill(config(step, 'message'), ctx);
      // The process log is shared by every tenant: a log step in a loop writes at most this much a line.
      const text = typeof message === 'string' ? message : JSON.stringify(message ?? null);
      const logged = text.length > LOG_STEP_MAX_CHARS ? `${text.slice(0, LOG_STEP_MAX_CHARS)}… [${text.length} characters]` : message;
      ctx.deps.log.info({ workflow: ctx.workflow.key, run: ctx.run.id, step: step.id, message: logged }, 'workflow log step');
      return { output: { message } };
    }
    default:
      throw new Error(`the action "${step.action_id}" cannot run in this release`);
  }
}

async function runIntentStep(step: StepDef, ctx: StepContext): Promise<StepResult> {
  let domain = config<string | undefined>(step, 'domain');
  let intent = config<string | undefined>(step, 'intent');
  const ref = config<string | undefined>(step, 'intent_id');
  if (ref) {
    const parsed = parseIntentRef(ref);
    if (!parsed) throw new Error(`"${ref}" is not an intent id`);
    if (parsed.kind === 'key') {
      domain = parsed.domain;
      intent = parsed.intent;
    } else {
      const row = await findCustomIntentKeys(ctx.em, ctx.scope.tenantId, parsed.id);
      if (!row) throw new Error(`the intent ${ref} no longer exists`);
      domain = row.domain_key;
      intent = row.intent_key;
    }
  }
  // Without an input mapping the intent reads the run's input as the trigger received it.
  const mapping = config<Record<string, unknown> | undefined>(step, 'input');
  const input = ((mapping === undefined ? ctx.vars.trigger : fill(mapping, ctx)) ?? {}) as Record<string, unknown>;
  // Model calls of a run started by an agent draw from that agent's cost budget too.
  const result = await runIntent(ctx.em.fork(), ctx.deps, ctx.scope, domain!, intent!, {
    input: { ...input, user_id: typeof input.user_id === 'string' && input.user_id ? input.user_id : `workflow:${ctx.workflow.key}` },
  } as never, {
    budget: ctx.lineage.budget ?? undefined,
    // Online evaluation samples the step by its own rules (workflow and step), the run and step as its
    // source; a test run of a draft is not production traffic.
    online: ctx.run.scope === 'live'
      ? { target: { kind: 'workflow_step', workflowKey: ctx.workflow.key, stepId: step.id }, sourceKind: 'workflow_step', sourceId: `${ctx.run.id}/${step.id}` }
      : null,
  });
  return { output: result.data.output };
}

async function runAgentStep(step: StepDef, ctx: StepContext): Promise<StepResult> {
  const resuming = resumeFor(step, ctx, 'input');
  const message = resuming ? String(resuming.data.message ?? '') : String(fill(config(step, 'message'), ctx) ?? '');
  // The answer continues the agent session the question was asked in (the step's waiting row has it).
  const sessionId = resuming ? ((ctx.vars.steps as Record<string, { output?: { session_id?: string } }>)[step.id]?.output?.session_id ?? null) : null;
  const em = ctx.em.fork();
  const agentKey = String(config(step, 'agent_key'));
  // Refused before the agent run exists when the tree of nested runs is as deep or as wide as the plan allows.
  const lineage = enterNestedRun(ctx.lineage, ctx.guard.limits, `the agent "${agentKey}"`, { signal: ctx.guard.signal });
  // Through the port: agents run workflows too (their workflow tools).
  const result = await ctx.deps.runs.agents.runNested(em, ctx.scope, { agentKey, message, userId: `workflow:${ctx.workflow.key}`, sessionId }, lineage);
  // An agent run stopped by this run's own end (its time limit, a cancel from above) stops the run.
  if (result.status === 'cancelled') ctx.guard.check();
  const output = { output: result.output, status: result.status, run_id: result.run_id, session_id: result.session_id, total_cost: result.total_cost };
  if (result.status === 'needs_input') return { output: { question: result.output, ...output }, wait: { kind: 'input' } };
  if (result.status !== 'completed') throw Object.assign(new Error(`the agent run ended ${result.status}`), { output });
  return { output };
}

async function runLoop(step: StepDef, ctx: StepContext): Promise<StepResult> {
  const items = evaluate(String(config(step, 'items')), ctx);
  if (!Array.isArray(items)) throw new Error('the items expression must give a list');
  const max = config<number | undefined>(step, 'max_iterations') ?? 100;
  if (items.length > max) throw new Error(`the list has ${items.length} items; max_iterations is ${max}`);
  const body = ctx.byId.get(String(config(step, 'step_ref')));
  if (!body) throw new Error('the loop body step does not exist');
  // Checked at save; a definition stored before that rule must still not recurse without end.
  const loopDepth = (ctx.loopDepth ?? 0) + 1;
  if (loopDepth > MAX_LOOP_NESTING) throw new Error(`loops are nested more than ${MAX_LOOP_NESTING} deep`);
  // A loop that waited (an approval in its body) goes on at the iteration that waited, with the
  // results before it as its waiting row saved them.
  const resumed = ctx.resume?.stepId === step.id ? ctx.resume : null;
  const saved = resumed ? ((ctx.vars.steps as Record<string, { output?: { iteration?: number; results?: unknown[] } }>)[step.id]?.output ?? null) : null;
  const start = resumed && typeof saved?.iteration === 'number' ? saved.iteration : 0;
  const results: unknown[] = resumed && Array.isArray(saved?.results) ? saved.results.slice(0, start) : [];
  // The loop's output is the list of results: it grows by each one, and may not pass a step's output size.
  let outputBytes = ctx.guard.outputSize(results, 'the loop\'s results');
  for (let index = start; index < items.length; index++) {
    // Every iteration is a step execution of the run (counted, timed, and a chance to yield).
    await ctx.guard.beforeStep();
    // The body sees the item as `loop.item` (and `loop.index`); only the body step itself runs.
    const vars = { ...ctx.vars, loop: { item: items[index], index } };
    const bodyResume = resumed && index === start ? { ...resumed, stepId: body.id } : null;
    const result = await executeStep(body, { ...ctx, vars, resume: bodyResume, loopIndex: index, loopDepth });
    if (result.wait) {
      if (result.wait.kind === 'input') throw new Error('a step inside a loop cannot wait for input');
      return {
        output: { iteration: index, results, waiting: result.output },
        wait: { ...result.wait, approvalStepId: result.wait.approvalStepId ?? body.id, loopIndex: index },
      };
    }
    outputBytes += 1 + ctx.guard.outputSize(result.output, `the result of iteration ${index}`);
    const cap = ctx.guard.limits.step_output_bytes;
    if (outputBytes > cap) throw new LimitExceededError('step_output_bytes', cap, `the loop's results passed the ${cap} bytes a step may output (at iteration ${index})`);
    results.push(result.output);
  }
  return { output: results };
}

async function runApproval(step: StepDef, ctx: StepContext): Promise<StepResult> {
  const resumed = resumeFor(step, ctx, 'approval');
  if (resumed) {
    const data = resumed.data;
    if (data.timed_out) throw Object.assign(new Error('the approval timed out'), { output: { approval_id: data.approval_id ?? null, status: 'timed_out' } });
    const output = { approval_id: data.approval_id ?? null, decision: data.decision, comment: data.comment ?? null, decided_by: data.decided_by ?? null, decided_at: data.decided_at ?? null };
    if (data.decision === 'approve') return { output };
    // Reject: on_failure when the step has one, else the run ends rejected.
    return step.on_failure_step_id ? { output, next: step.on_failure_step_id } : { output, endStatus: 'rejected' };
  }
  const approvalId = randomUUID();
  const message = String(fill(config(step, 'message'), ctx) ?? '');
  const timeout = config<number | undefined>(step, 'timeout_seconds');
  const wakeAt = timeout ? new Date(Date.now() + timeout * 1000) : undefined;
  return {
    output: { approval_id: approvalId, message, expires_at: wakeAt?.toISOString() ?? null },
    wait: { kind: 'approval', approvalId, message, wakeAt },
  };
}

async function runDelay(step: StepDef, ctx: StepContext): Promise<StepResult> {
  const resumed = resumeFor(step, ctx, 'delay');
  if (resumed) return { output: { waited_until: resumed.data.resume_at ?? null, resumed_at: new Date().toISOString() } };
  const seconds = config<number | undefined>(step, 'seconds');
  let resumeAt: Date;
  if (seconds !== undefined) resumeAt = new Date(Date.now() + seconds * 1000);
  else {
    const until = fill(config(step, 'until'), ctx);
    resumeAt = new Date(String(until));
    if (Number.isNaN(resumeAt.getTime())) throw new Error(`until gave ${JSON.stringify(until)}, not a date-time`);
  }
  // A moment already past does not wait.
  if (resumeAt.getTime() <= Date.now()) return { output: { waited_until: resumeAt.toISOString(), resumed_at: new Date().toISOString() } };
  return { output: { resume_at: resumeAt.toISOString() }, wait: { kind: 'delay', wakeAt: resumeAt } };
}

async function waitForCallback(step: StepDef, ctx: StepContext): Promise<StepResult> {
  let resumed = resumeFor(step, ctx, 'callback');
  if (!resumed) {
    // A callback that came before the run got here is taken now: moved into resume, so a crash
    // between here and the step's row loses nothing.
    const early = await takeEarlyCallback(ctx.deps.sql, ctx.scope.tenantId, ctx.run.id, step.id);
    if (early) {
      ctx.callbackSeq++;
      resumed = { stepId: step.id, kind: 'callback', data: early.resume.data };
    }
  }
  if (resumed) {
    if (resumed.data.timed_out) throw new Error('no callback arrived before the timeout');
    return { output: resumed.data.body ?? null };
  }
  const timeout = config<number | undefined>(step, 'timeout_seconds');
  const wakeAt = timeout ? new Date(Date.now() + timeout * 1000) : undefined;
  return { output: { waiting_for_callback: true, expires_at: wakeAt?.toISOString() ?? null }, wait: { kind: 'callback', wakeAt } };
}

export async function executeStep(step: StepDef, ctx: StepContext): Promise<StepResult> {
  switch (step.step_type) {
    case 'trigger':
      return { output: ctx.vars.trigger };
    case 'action':
      return runAction(step, ctx);
    case 'condition': {
      const value = evaluate(String(config(step, 'expression')), ctx);
      if (typeof value !== 'boolean') throw new Error(`the condition gave ${JSON.stringify(value)}, not true or false`);
      return { output: { result: value }, next: value ? step.on_success_step_id ?? nextInOrder(step, ctx) : step.on_failure_step_id };
    }
    case 'switch': {
      const value = evaluate(String(config(step, 'expression')), ctx);
      const cases = config<{ value: unknown; next_ref: string }[]>(step, 'cases') ?? [];
      const match = cases.find((c) => JSON.stringify(c.value) === JSON.stringify(value));
      return { output: { value, matched: match ? match.next_ref : null }, next: match?.next_ref ?? config<string | undefined>(step, 'default_ref') ?? null };
    }
    case 'loop':
      return runLoop(step, ctx);
    case 'approval':
      return runApproval(step, ctx);
    case 'delay':
      return runDelay(step, ctx);
    case 'ai_intent':
      return runIntentStep(step, ctx);
    case 'ai_agent':
      return runAgentStep(step, ctx);
    case 'end':
      return { output: fill(config(step, 'output') ?? null, ctx), end: true };
    default:
      throw new Error(`${step.step_type} steps cannot run in this release`);
  }
}

/** The step after this one by step_order, when it does not name its successor. */
export const nextInOrder = (step: StepDef, ctx: Pick<StepContext, 'nextOf'>): string | null => ctx.nextOf.get(step.id) ?? null;

