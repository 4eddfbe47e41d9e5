// Checks a workflow definition before it is saved ('draft') or made runnable ('live'), and reports
// every problem at once, each naming its step and a path (`steps[2].config.url`).
//
// The step graph follows the engine (engine/run-workflow.ts, engine/execute-step.ts):
// - "next by step_order": the steps sorted by step_order (stable: ties keep their array order); a
//   step's implicit successor is the one after it in that order, the last one has none.
// - trigger, action, delay, ai_intent, ai_agent, approval, loop: success goes to on_success, else to
//   the next by step_order; a failure goes to on_failure (none: the run fails).
// - condition: true as above; false (and an error) to on_failure, none: the run ends.
// - switch: a matching case's next_ref, else default_ref, else the run ends; an error to on_failure.
//   It never follows on_success.
// - loop: also an edge to its body (config.step_ref), run once per item.
// - end: the run ends; only on_failure can follow it.
//
// Cycle rule: let G be the graph of all those edges, and G' be G without the loop-body edges (loop
// step -> its step_ref). G' must be acyclic. Equivalently: every cycle in G uses at least one
// loop-body edge, so a loop can come back to its own loop step (each pass counts against
// max_iterations), while any other cycle (including one through a loop's exit edge) is an error.
import { z } from 'zod';
import { compileExpression, findTemplatePlaceholders } from './expressions.js';
import { EXPRESSION_FIELDS, isActionId, isStepType, stepConfigSchema, type StepDef } from './step-types.js';

export interface DefinitionIssue {
  step_id: string | null;
  step_name: string | null;
  path: string;
  message: string;
  code: string;
}

export type DefinitionMode = 'draft' | 'live';

/** Step ids a step refers to: on_success/on_failure, switch next_ref/default_ref, loop step_ref. Paths are relative to the step. */
export function stepReferences(step: StepDef): { path: string; id: string }[] {
  const refs: { path: string; id: string }[] = [];
  const add = (path: string, id: unknown) => {
    if (typeof id === 'string' && id !== '') refs.push({ path, id });
  };
  add('on_success_step_id', step.on_success_step_id);
  add('on_failure_step_id', step.on_failure_step_id);
  const config = isRecord(step.config) ? step.config : {};
  if (step.step_type === 'switch') {
    if (Array.isArray(config.cases)) {
      config.cases.forEach((c: unknown, i) => add(`config.cases[${i}].next_ref`, isRecord(c) ? c.next_ref : undefined));
    }
    add('config.default_ref', config.default_ref);
  }
  if (step.step_type === 'loop') add('config.step_ref', config.step_ref);
  return refs;
}

/** Each step's successor by step_order (null for the last), as the engine computes it: a stable sort, so ties keep array order. */
export function findNextByOrder(steps: StepDef[]): Map<string, string | null> {
  // A non-numeric step_order (reported on its own) must not make the comparison inconsistent.
  const order = (s: StepDef) => (Number.isFinite(s.step_order) ? s.step_order : 0);
  const ordered = [...steps].sort((a, b) => order(a) - order(b));
  return new Map(ordered.map((s, i) => [s.id, ordered[i + 1]?.id ?? null]));
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]*$/;
const pathOf = (segments: readonly PropertyKey[]) =>
  segments
    .map((s) => (typeof s === 'number' ? `[${s}]` : IDENTIFIER.test(String(s)) ? `.${String(s)}` : `[${JSON.stringify(String(s))}]`))
    .join('');

// A missing key reads better as "is required" than zod's "expected string, received undefined".
const zodMessages: z.core.$ZodErrorMap = (issue) => (issue.input === undefined && issue.code !== 'custom' ? 'is required' : undefined);

interface Edge {
  to: number;
  path: string;
  /** loop step -> its body: the one edge a cycle may use */
  body: boolean;
}

/**
 * 'draft': each step's own config, action ids, expressions compile, and references (on_success,
 * switch and loop refs, `{{steps.x}}` templates, `steps.x` in expressions) name existing steps.
 * 'live': also the graph rules: at least one step, exactly one trigger, no unreachable step, no
 * cycle except through a loop body, no on_success on end and switch steps, no reference to the
 * trigger or from a loop to itself. Runs in O(steps + references + config size), plus a sort.
 */
export function validateDefinition(steps: StepDef[], mode: DefinitionMode): DefinitionIssue[] {
  const issues: DefinitionIssue[] = [];
  const report = (index: number | null, path: string, code: string, message: string) => {
    const step = index === null ? null : steps[index];
    issues.push({
      step_id: typeof step?.id === 'string' ? step.id : null,
      step_name: typeof step?.name === 'string' ? step.name : null,
      path: index === null ? path : `steps[${index}]${path ? `.${path}` : ''}`,
      message,
      code,
    });
  };
  if (!Array.isArray(steps)) {
    report(null, 'steps', 'invalid_steps', 'must be a list of steps');
    return issues;
  }

  // Ids first: every later check resolves references through this map (first step with an id wins).
  const indexById = new Map<string, number>();
  steps.forEach((step, i) => {
    if (!isRecord(step)) return;
    if (typeof step.id !== 'string' || step.id.trim() === '' || step.id.length > 100) {
      report(i, 'id', 'invalid_step_id', 'must be a non-empty string of at most 100 characters');
    } else if (indexById.has(step.id)) {
      report(i, 'id', 'duplicate_step_id', `the id "${step.id}" is also used by steps[${indexById.get(step.id)}]`);
    } else {
      indexById.set(step.id, i);
    }
  });

  steps.forEach((step, i) => {
    if (!isRecord(step)) return report(i, '', 'invalid_step', 'must be an object');
    checkStep(step, i, indexById, report);
  });
  if (mode === 'live') checkGraph(steps, indexById, report);
  return issues;
}

type Report = (index: number | null, path: string, code: string, message: string) => void;

function checkStep(step: StepDef, i: number, indexById: Map<string, number>, report: Report): void {
  if (!isStepType(step.step_type)) {
    report(i, 'step_type', 'unknown_step_type', `"${String(step.step_type)}" is not a step type`);
    return;
  }
  if (!Number.isInteger(step.step_order)) report(i, 'step_order', 'invalid_step_order', 'must be an integer');
  if (step.step_type === 'action') {
    if (step.action_id === null || step.action_id === undefined) report(i, 'action_id', 'missing_action_id', 'is required for action steps');
    else if (!isActionId(step.action_id)) report(i, 'action_id', 'unknown_action', `"${String(step.action_id)}" is not an action (see GET /v1/workflows/actions)`);
  } else if (step.action_id !== null && step.action_id !== undefined) {
    report(i, 'action_id', 'unexpected_action_id', `only action steps have an action_id`);
  }

  const schema = stepConfigSchema(step.step_type, step.action_id);
  if (schema) {
    const result = schema.safeParse(step.config, { error: zodMessages });
    // Unknown keys are no issue: the config schemas drop them (apply-step-inputs.ts stores the rest).
    for (const issue of result.success ? [] : result.error.issues) report(i, `config${pathOf(issue.path)}`, 'invalid_config', issue.message);
  }

  const config = isRecord(step.config) ? step.config : {};
  const checkStepRef = (path: string, id: string) => {
    if (!indexById.has(id)) report(i, path, 'unknown_step_reference', `no step has the id "${id}"`);
  };
  for (const field of EXPRESSION_FIELDS[step.step_type] ?? []) {
    const source = config[field];
    if (typeof source !== 'string' || source.trim() === '') continue; // the schema reported it
    const compiled = compileExpression(source);
    if (!compiled.ok) report(i, `config.${field}`, 'invalid_expression', `the expression does not compile: ${compiled.error}`);
    else for (const id of compiled.stepRefs) checkStepRef(`config.${field}`, id);
  }
  checkTemplates(config, step.step_type, i, checkStepRef, report);
  for (const ref of stepReferences(step)) checkStepRef(ref.path, ref.id);
}

/** Deepest nesting of a step's config (the engine renders templates recursively). */
export const MAX_CONFIG_DEPTH = 32;

/** Every string of the config (deeply, expressions aside): placeholders must name a variable, and `steps.<id>` a step. */
function checkTemplates(config: Record<string, unknown>, stepType: StepDef['step_type'], i: number, checkStepRef: (path: string, id: string) => void, report: Report): void {
  const skip = new Set(EXPRESSION_FIELDS[stepType] ?? []);
  // Iterative, and depth-capped so copying paths stays linear: a config is client JSON of any depth.
  const stack: { value: unknown; path: PropertyKey[] }[] = Object.entries(config)
    .filter(([k]) => !skip.has(k))
    .map(([k, value]) => ({ value, path: [k] }));
  let tooDeep = false;
  while (stack.length) {
    const { value, path } = stack.pop()!;
    if (path.length > MAX_CONFIG_DEPTH && typeof value === 'object' && value !== null) {
      if (!tooDeep) report(i, `config${pathOf(path)}`, 'invalid_config', `nested more than ${MAX_CONFIG_DEPTH} levels deep`);
      tooDeep = true;
      continue;
    }
    if (typeof value === 'string') {
      if (!value.includes('{{')) continue;
      for (const placeholder of findTemplatePlaceholders(value)) {
        if (!placeholder.valid) {
          report(i, `config${pathOf(path)}`, 'invalid_template', `{{${placeholder.path}}} names nothing (use trigger, steps, state, run or loop); it would be empty at run time`);
        } else if (placeholder.stepId !== null) {
          checkStepRef(`config${pathOf(path)}`, placeholder.stepId);
        }
      }
    } else if (Array.isArray(value)) {
      value.forEach((item, k) => stack.push({ value: item, path: [...path, k] }));
    } else if (isRecord(value)) {
      for (const [k, item] of Object.entries(value)) stack.push({ value: item, path: [...path, k] });
    }
  }
}

/** The edges leaving a step, per the rules at the top of this file; unresolved references are left out (reported already). */
function edgesOf(step: StepDef, next: string | null, indexById: Map<string, number>): Edge[] {
  const edges: Edge[] = [];
  const add = (id: string | null | undefined, path: string, body = false) => {
    const to = typeof id === 'string' ? indexById.get(id) : undefined;
    if (to !== undefined) edges.push({ to, path, body });
  };
  const config = isRecord(step.config) ? step.config : {};
  const onSuccessOrNext = () => {
    if (step.on_success_step_id) add(step.on_success_step_id, 'on_success_step_id');
    else add(next, 'step_order');
  };
  switch (step.step_type) {
    case 'end':
      break;
    case 'switch':
      for (const ref of stepReferences(step)) if (ref.path.startsWith('config.')) add(ref.id, ref.path);
      break;
    case 'loop':
      add(typeof config.step_ref === 'string' ? config.step_ref : null, 'config.step_ref', true);
      onSuccessOrNext();
      break;
    default:
      onSuccessOrNext();
  }
  add(step.on_failure_step_id, 'on_failure_step_id');
  return edges;
}

function checkGraph(steps: StepDef[], indexById: Map<string, number>, report: Report): void {
  if (steps.length === 0) {
    report(null, 'steps', 'no_steps', 'a workflow needs at least a trigger step');
    return;
  }
  // Steps the graph can hold: well-formed, and owning their id (a duplicate was reported already).
  const valid = steps.map((s, i) => isRecord(s) && isStepType(s.step_type) && indexById.get(s.id) === i);
  const triggers = steps.flatMap((s, i) => (valid[i] && s.step_type === 'trigger' ? [i] : []));
  const isTrigger = new Set(triggers);
  if (triggers.length === 0) report(null, 'steps', 'missing_trigger', 'a workflow needs exactly one trigger step');
  for (const i of triggers.slice(1)) report(i, 'step_type', 'multiple_triggers', `a workflow has exactly one trigger; steps[${triggers[0]}] is the trigger already`);

  const nextOf = findNextByOrder(steps.filter((_, i) => valid[i]));
  const edges: Edge[][] = steps.map((step, i) => (valid[i] ? edgesOf(step, nextOf.get(step.id) ?? null, indexById) : []));

  steps.forEach((step, i) => {
    if (!valid[i]) return;
    if (step.step_type === 'end' && step.on_success_step_id) report(i, 'on_success_step_id', 'end_has_successor', 'an end step ends the run: it has no on_success');
    if (step.step_type === 'switch' && step.on_success_step_id) {
      report(i, 'on_success_step_id', 'unused_on_success', 'a switch goes to a case\'s next_ref or default_ref; on_success is never followed');
    }
    if (step.step_type === 'loop' && step.config?.step_ref === step.id) report(i, 'config.step_ref', 'invalid_loop_body', 'a loop cannot be its own body');
    else if (step.step_type === 'loop') checkLoopNesting(steps, i, indexById, report);
    for (const ref of stepReferences(step)) {
      const target = indexById.get(ref.id);
      if (target !== undefined && isTrigger.has(target)) report(i, ref.path, 'reference_to_trigger', 'the trigger starts the run; no step can lead to it');
    }
  });

  // Reachability from the trigger(s), over every edge (a loop body included).
  if (triggers.length > 0) {
    const seen = new Array<boolean>(steps.length).fill(false);
    const queue = [...triggers];
    for (const t of triggers) seen[t] = true;
    while (queue.length) {
      for (const edge of edges[queue.pop()!]) {
        if (!seen[edge.to]) (seen[edge.to] = true), queue.push(edge.to);
      }
    }
    steps.forEach((_, i) => {
      if (!seen[i] && valid[i]) report(i, '', 'unreachable_step', 'no path from the trigger leads to this step');
    });
  }

  for (const component of findCycles(edges)) {
    const first = Math.min(...component);
    const members = new Set(component);
    const cycle = traceCycle(first, edges, members);
    const edge = edges[first].find((e) => !e.body && members.has(e.to))!;
    const names = cycle.map((k) => JSON.stringify(steps[k].name ?? steps[k].id)).join(' -> ');
    report(first, edge.path, 'cycle', `these steps form a cycle that does not go through a loop body: ${names}`);
  }
}

/** Loops nested in loops (a loop whose body is a loop ...) deeper than this are refused: each level multiplies the steps a run takes. */
export const MAX_LOOP_NESTING = 3;

/**
 * A loop's body runs inside it: a body that is a loop whose body leads back to the first would
 * recurse without end, and every level multiplies the iterations. Follows the chain of bodies.
 */
function checkLoopNesting(steps: StepDef[], i: number, indexById: Map<string, number>, report: Report): void {
  const chain = [i];
  for (let at = i; ; ) {
    const body = indexById.get(String(steps[at].config?.step_ref));
    if (body === undefined || steps[body]?.step_type !== 'loop') return;
    if (chain.includes(body)) {
      const names = [...chain, body].map((k) => JSON.stringify(steps[k].name ?? steps[k].id)).join(' -> ');
      report(i, 'config.step_ref', 'loop_body_cycle', `these loops run each other as their bodies without end: ${names}`);
      return;
    }
    chain.push(body);
    if (chain.length > MAX_LOOP_NESTING) {
      report(i, 'config.step_ref', 'loop_too_deep', `loops are nested more than ${MAX_LOOP_NESTING} deep (a loop whose body is a loop ...); each level multiplies the steps a run takes`);
      return;
    }
    at = body;
  }
}

/** Strongly connected components of G' (no body edges) that contain a cycle: Tarjan's algorithm, iterative. */
function findCycles(edges: Edge[][]): number[][] {
  const n = edges.length;
  const index = new Array<number>(n).fill(-1);
  const low = new Array<number>(n).fill(0);
  const onStack = new Array<boolean>(n).fill(false);
  const stack: number[] = [];
  const components: number[][] = [];
  let counter = 0;
  for (let root = 0; root < n; root++) {
    if (index[root] !== -1) continue;
    const work: { node: number; edge: number }[] = [{ node: root, edge: 0 }];
    index[root] = low[root] = counter++;
    stack.push(root);
    onStack[root] = true;
    while (work.length) {
      const frame = work[work.length - 1];
      const out = edges[frame.node];
      if (frame.edge < out.length) {
        const { to, body } = out[frame.edge++];
        if (body) continue;
        if (index[to] === -1) {
          index[to] = low[to] = counter++;
          stack.push(to);
          onStack[to] = true;
          work.push({ node: to, edge: 0 });
        } else if (onStack[to]) {
          low[frame.node] = Math.min(low[frame.node], index[to]);
        }
        continue;
      }
      work.pop();
      if (work.length) low[work[work.length - 1].node] = Math.min(low[work[work.length - 1].node], low[frame.node]);
      if (low[frame.node] !== index[frame.node]) continue;
      const component: number[] = [];
      let member: number;
      do {
        member = stack.pop()!;
        onStack[member] = false;
        component.push(member);
      } while (member !== frame.node);
      const selfLoop = component.length === 1 && out.some((e) => !e.body && e.to === frame.node);
      if (component.length > 1 || selfLoop) components.push(component);
    }
  }
  return components;
}

/** One cycle through `start` inside its component (breadth-first, so the shortest), as step indexes ending at `start` again. */
function traceCycle(start: number, edges: Edge[][], members: Set<number>): number[] {
  const parent = new Map<number, number>();
  const queue = [start];
  for (let head = 0; head < queue.length; head++) {
    const node = queue[head];
    for (const { to, body } of edges[node]) {
      if (body || !members.has(to)) continue;
      if (to === start) {
        const chain: number[] = [];
        for (let k = node; k !== start; k = parent.get(k)!) chain.unshift(k);
        return [start, ...chain, start];
      }
      if (!parent.has(to)) parent.set(to, node), queue.push(to);
    }
  }
  return [start, start];
}
