// What each step type does. A step gets the run's scope (trigger, earlier steps, state, run) and
// answers its output and where the run goes next; it never writes the run's progress itself.
import type { EntityManager } from '../../../db/orm.js';
import { executeAgentRun, prepareAgentRun, type AgentRunScope } from '../../agents/run-agent.js';
import { parseIntentRef } from '../../agents/agent-references.js';
import type { AppDeps } from '../../deps.js';
import { queueMail } from '../../mail/outbox.js';
import { runIntent } from '../../intents/run-intent.service.js';
import { compileExpression } from '../expressions.js';
import type { StepDef } from '../step-types.js';
import { renderTemplate } from './templates.js';
import { readStateValue, setState, type StateKey } from './workflow-state.js';

export interface StepContext {
  em: EntityManager;
  deps: AppDeps;
  scope: AgentRunScope;
  workflow: { id: string; key: string };
  run: { id: string; conversationId: string; scope: 'live' | 'test' };
  state: StateKey;
  /** trigger, steps, state, run (and loop inside a loop body): what templates and expressions read. */
  vars: Record<string, unknown>;
  byId: Map<string, StepDef>;
  /** Each step's successor by step_order (null for the last). */
  nextOf: Map<string, string | null>;
  /** Set when a paused ai_agent step is continued with the user's answer. */
  resume: { stepId: string; message: string; sessionId: string | null } | null;
}

export interface StepResult {
  output: unknown;
  /** The step chose its successor (condition, switch); undefined: the usual on_success / order rule. */
  next?: string | null;
  /** The run pauses here (an agent asked the user); the step is run again with the answer. */
  pause?: { status: 'needs_input'; question: string; sessionId: string };
  /** An end step: the run's output. */
  end?: boolean;
}

const config = <T = unknown>(step: StepDef, key: string) => step.config[key] as T;

function evaluate(source: string, vars: Record<string, unknown>): unknown {
  const compiled = compileExpression(source);
  if (!compiled.ok) throw new Error(`the expression does not compile: ${compiled.error}`);
  return compiled.evaluate(vars as never);
}

/** Reads a response body up to `max` bytes, so one answer cannot fill the memory. */
async function readLimited(res: Response, max: number): Promise<{ text: string; truncated: boolean }> {
  if (!res.body) return { text: '', truncated: false };
  const reader = res.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  let truncated = false;
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    if (size + value.length > max) {
      chunks.push(value.subarray(0, max - size));
      truncated = true;
      await reader.cancel();
      break;
    }
    chunks.push(value);
    size += value.length;
  }
  return { text: Buffer.concat(chunks).toString('utf8'), truncated };
}

async function httpRequest(step: StepDef, ctx: StepContext): Promise<StepResult> {
  const c = renderTemplate(step.config, ctx.vars) as { method?: string; url: string; headers?: Record<string, unknown>; body?: unknown; timeout_ms?: number };
  const method = (c.method ?? 'GET').toUpperCase();
  const headers: Record<string, string> = Object.fromEntries(Object.entries(c.headers ?? {}).map(([k, v]) => [k, typeof v === 'string' ? v : JSON.stringify(v)]));
  let body: string | undefined;
  if (c.body !== undefined && c.body !== null && method !== 'GET' && method !== 'HEAD') {
    body = typeof c.body === 'string' ? c.body : JSON.stringify(c.body);
    if (typeof c.body !== 'string' && !Object.keys(headers).some((h) => h.toLowerCase() === 'content-type')) headers['content-type'] = 'application/json';
  }
  const timeout = c.timeout_ms ?? ctx.deps.config.OUTBOUND_TIMEOUT_MS;
  const res = await ctx.deps.outbound.fetch(String(c.url), { method, headers, body, signal: AbortSignal.timeout(timeout) });
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
      const key = String(renderTemplate(config(step, 'key'), ctx.vars));
      const value = renderTemplate(config(step, 'value'), ctx.vars);
      await setState(ctx.deps.sql, ctx.state, key, value, config<number | undefined>(step, 'ttl_seconds') ?? null);
      (ctx.vars.state as Record<string, unknown>)[key] = value;
      return { output: { key, value } };
    }
    case 'get_state': {
      const key = String(renderTemplate(config(step, 'key'), ctx.vars));
      const { found, value } = await readStateValue(ctx.deps.sql, ctx.state, key);
      return { output: { key, value, found } };
    }
    case 'transform':
      return { output: renderTemplate(config(step, 'output'), ctx.vars) };
    case 'send_email': {
      const c = renderTemplate(step.config, ctx.vars) as { to: string; subject: string; body: string };
      const em = ctx.em.fork();
      await em.transactional((tx) => queueMail(tx, ctx.deps, { to: String(c.to), subject: String(c.subject), body: String(c.body), kind: 'workflow_email' }));
      return { output: { queued: true, to: c.to } };
    }
    case 'log': {
      const message = renderTemplate(config(step, 'message'), ctx.vars);
      ctx.deps.log.info({ workflow: ctx.workflow.key, run: ctx.run.id, step: step.id, message }, 'workflow log step');
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
      const [row] = await ctx.em.execute<{ domain_key: string; intent_key: string }[]>('select domain_key, intent_key from custom_intents where tenant_id = ? and id = ?', [ctx.scope.tenantId, parsed.id]);
      if (!row) throw new Error(`the intent ${ref} no longer exists`);
      domain = row.domain_key;
      intent = row.intent_key;
    }
  }
  const input = (renderTemplate(config(step, 'input') ?? {}, ctx.vars) ?? {}) as Record<string, unknown>;
  const result = await runIntent(ctx.em.fork(), ctx.deps, ctx.scope, domain!, intent!, {
    input: { ...input, user_id: typeof input.user_id === 'string' && input.user_id ? input.user_id : `workflow:${ctx.workflow.key}` },
  } as never);
  return { output: result.data.output };
}

async function runAgentStep(step: StepDef, ctx: StepContext): Promise<StepResult> {
  const resuming = ctx.resume?.stepId === step.id ? ctx.resume : null;
  const message = resuming ? resuming.message : String(renderTemplate(config(step, 'message'), ctx.vars) ?? '');
  const em = ctx.em.fork();
  const prepared = await prepareAgentRun(em, ctx.deps, ctx.scope, {
    agentKey: String(config(step, 'agent_key')),
    input: { message, user_id: `workflow:${ctx.workflow.key}` },
    ...(resuming?.sessionId ? { session_id: resuming.sessionId } : {}),
  });
  const result = await executeAgentRun(em, ctx.deps, prepared);
  const output = { output: result.output, status: result.status, run_id: result.run_id, session_id: result.session_id, total_cost: result.total_cost };
  if (result.status === 'needs_input') return { output, pause: { status: 'needs_input', question: result.output, sessionId: result.session_id } };
  if (result.status !== 'completed') throw Object.assign(new Error(`the agent run ended ${result.status}`), { output });
  return { output };
}

async function runLoop(step: StepDef, ctx: StepContext): Promise<StepResult> {
  const items = evaluate(String(config(step, 'items')), ctx.vars);
  if (!Array.isArray(items)) throw new Error('the items expression must give a list');
  const max = config<number | undefined>(step, 'max_iterations') ?? 100;
  if (items.length > max) throw new Error(`the list has ${items.length} items; max_iterations is ${max}`);
  const body = ctx.byId.get(String(config(step, 'step_ref')));
  if (!body) throw new Error('the loop body step does not exist');
  const results: unknown[] = [];
  for (const [index, item] of items.entries()) {
    // The body sees the item as `loop.item` (and `loop.index`); only the body step itself runs.
    const vars = { ...ctx.vars, loop: { item, index } };
    const result = await executeStep(body, { ...ctx, vars });
    if (result.pause) throw new Error('a step inside a loop cannot wait for input');
    results.push(result.output);
  }
  return { output: results };
}

export async function executeStep(step: StepDef, ctx: StepContext): Promise<StepResult> {
  switch (step.step_type) {
    case 'trigger':
      return { output: ctx.vars.trigger };
    case 'action':
      return runAction(step, ctx);
    case 'condition': {
      const value = evaluate(String(config(step, 'expression')), ctx.vars);
      if (typeof value !== 'boolean') throw new Error(`the condition gave ${JSON.stringify(value)}, not true or false`);
      return { output: { result: value }, next: value ? step.on_success_step_id ?? nextInOrder(step, ctx) : step.on_failure_step_id };
    }
    case 'switch': {
      const value = evaluate(String(config(step, 'expression')), ctx.vars);
      const cases = config<{ value: unknown; next_ref: string }[]>(step, 'cases') ?? [];
      const match = cases.find((c) => JSON.stringify(c.value) === JSON.stringify(value));
      return { output: { value, matched: match ? match.next_ref : null }, next: match?.next_ref ?? config<string | undefined>(step, 'default_ref') ?? null };
    }
    case 'loop':
      return runLoop(step, ctx);
    case 'ai_intent':
      return runIntentStep(step, ctx);
    case 'ai_agent':
      return runAgentStep(step, ctx);
    case 'end':
      return { output: renderTemplate(config(step, 'output') ?? null, ctx.vars), end: true };
    default:
      throw new Error(`${step.step_type} steps cannot run in this release`);
  }
}

/** The step after this one by step_order, when it does not name its successor. */
export const nextInOrder = (step: StepDef, ctx: Pick<StepContext, 'nextOf'>): string | null => ctx.nextOf.get(step.id) ?? null;

