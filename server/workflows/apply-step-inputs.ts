// Turns the steps of a request into stored steps: ids kept or generated, references between steps
// resolved, order taken from the request. `steps` is an upsert by id: a sent id that exists edits
// that step, a new one adds a step, an existing step that is not sent is deleted.
import { randomBytes } from 'node:crypto';
import type { ValidationIssue } from '../errors.js';
// Client-chosen ids of STEP_ID_PATTERN's shape are kept: templates and expressions refer to steps by id.
import { ACTION_CATALOG, STEP_ID_PATTERN, stripUnknownConfigKeys, type StepDef } from './step-types.js';
import type { StepInput } from './workflows.schemas.js';


const generateStepId = () => `s_${randomBytes(5).toString('hex')}`;

const actionNames = new Map(ACTION_CATALOG.map((a) => [a.id, a.name]));
export const actionNameOf = (actionId: string | null) => (actionId ? (actionNames.get(actionId) ?? null) : null);

/** Switch targets and a loop's body name steps too: request ids there become stored ids. */
function rewriteConfigRefs(type: StepInput['step_type'], config: Record<string, unknown>, ids: Map<string, string>): Record<string, unknown> {
  const map = (v: unknown) => (typeof v === 'string' && ids.has(v) ? ids.get(v) : v);
  if (type === 'loop' && 'step_ref' in config) return { ...config, step_ref: map(config.step_ref) };
  if (type === 'switch') {
    const out: Record<string, unknown> = { ...config };
    if ('default_ref' in config) out.default_ref = map(config.default_ref);
    if (Array.isArray(config.cases)) {
      out.cases = config.cases.map((c: unknown) => (c && typeof c === 'object' && 'next_ref' in c ? { ...(c as object), next_ref: map((c as { next_ref: unknown }).next_ref) } : c));
    }
    return out;
  }
  return config;
}

export function applyStepInputs(previous: StepDef[] | null, inputs: StepInput[]): { steps: StepDef[]; issues: ValidationIssue[] } {
  const issues: ValidationIssue[] = [];
  const existing = new Set((previous ?? []).map((s) => s.id));
  const ids = new Map<string, string>(); // request id -> stored id
  const stored: (string | null)[] = inputs.map(() => null);
  inputs.forEach((input, i) => {
    if (input.id === undefined) return;
    if (ids.has(input.id)) {
      issues.push({ path: `steps.${i}.id`, message: `the id "${input.id}" is used by more than one step`, code: 'duplicate_id' });
      return;
    }
    if (existing.has(input.id) || STEP_ID_PATTERN.test(input.id)) {
      ids.set(input.id, input.id);
      stored[i] = input.id;
    }
  });
  // Generated ids last, so they never take an id the request chose.
  const used = new Set(ids.values());
  inputs.forEach((input, i) => {
    if (stored[i]) return;
    let id = generateStepId();
    while (used.has(id)) id = generateStepId();
    used.add(id);
    stored[i] = id;
    if (input.id !== undefined && !ids.has(input.id)) ids.set(input.id, id);
  });
  const resolve = (ref: string | null | undefined, path: string): string | null => {
    if (ref === null || ref === undefined) return null;
    const id = ids.get(ref);
    if (!id) issues.push({ path, message: `no step of this request has the id "${ref}"`, code: 'unknown_step' });
    return id ?? null;
  };
  const steps = inputs.map((input, i): StepDef => {
    return {
      id: stored[i]!,
      step_type: input.step_type,
      name: input.name ?? null,
      action_id: input.action_id ?? null,
      // Unknown config keys are dropped, not refused: the stored step holds what the engine reads.
      config: stripUnknownConfigKeys(input.step_type, input.action_id ?? null, rewriteConfigRefs(input.step_type, input.config ?? {}, ids)),
      position_x: input.position_x ?? null,
      position_y: input.position_y ?? null,
      step_order: i,
      guidance: input.guidance ?? null,
      on_success_step_id: resolve(input.on_success_ref, `steps.${i}.on_success_ref`),
      on_failure_step_id: resolve(input.on_failure_ref, `steps.${i}.on_failure_ref`),
    };
  });
  return { steps, issues };
}
