// Unit tests of workflow definitions: step configs (server/workflows/step-types.ts), CEL
// expressions and templates (expressions.ts) and the definition and graph rules (validate-definition.ts).
import { describe, expect, it } from 'vitest';
import { compileExpression, ExpressionError, findTemplatePlaceholders, MAX_EXPRESSION_LENGTH, type ExpressionVars } from '../../server/workflows/expressions.js';
import { ACTION_CATALOG, ACTION_IDS, checkCron, STEP_TYPES, stepConfigSchema, stripUnknownConfigKeys, type StepDef, type StepType } from '../../server/workflows/step-types.js';
import { findNextByOrder, stepReferences, validateDefinition, type DefinitionIssue } from '../../server/workflows/validate-definition.js';

function step(id: string, step_type: StepType, config: Record<string, unknown>, extra: Partial<StepDef> = {}): StepDef {
  return {
    id, step_type, name: `Step ${id}`, action_id: null, config, position_x: null, position_y: null,
    step_order: 0, guidance: null, on_success_step_id: null, on_failure_step_id: null, ...extra,
  };
}
/** Steps in array order get step_order 0, 1, 2, ... */
const wf = (...steps: StepDef[]) => steps.map((s, i) => ({ ...s, step_order: i }));
const trigger = (id = 'start', extra: Partial<StepDef> = {}) => step(id, 'trigger', { trigger_subtype: 'manual' }, extra);
const action = (id: string, actionId: string, config: Record<string, unknown>, extra: Partial<StepDef> = {}) => step(id, 'action', config, { action_id: actionId, ...extra });
const log = (id: string, extra: Partial<StepDef> = {}) => action(id, 'log', { message: `at ${id}` }, extra);
const end = (id = 'done', extra: Partial<StepDef> = {}) => step(id, 'end', { output: { ok: true } }, extra);
const codes = (issues: DefinitionIssue[]) => issues.map((i) => i.code);
/** Issues of one step checked on its own (draft mode, so no graph rules). */
const checkOne = (s: StepDef) => validateDefinition([s], 'draft');
const vars = (partial: Partial<ExpressionVars> = {}): ExpressionVars => ({ trigger: {}, steps: {}, state: {}, run: {}, ...partial });

function evaluate(source: string, v: ExpressionVars = vars()) {
  const compiled = compileExpression(source);
  if (!compiled.ok) throw new Error(`does not compile: ${compiled.error}`);
  // A deadline no loaded machine reaches: the tests of the deadline pass their own.
  return compiled.evaluate(v, { expression_ms: 10_000 });
}
function compileError(source: string): string {
  const compiled = compileExpression(source);
  expect(compiled.ok).toBe(false);
  return compiled.ok ? '' : compiled.error;
}

describe('step types and the action catalog', () => {
  it('lists every step type and action, each action with a JSON Schema that allows unknown keys (they are dropped)', () => {
    expect(STEP_TYPES).toEqual(['trigger', 'action', 'condition', 'switch', 'delay', 'loop', 'ai_intent', 'ai_agent', 'approval', 'end']);
    expect(ACTION_CATALOG.map((a) => a.id)).toEqual([...ACTION_IDS]);
    for (const entry of ACTION_CATALOG) {
      expect(entry.name).toBeTruthy();
      expect(entry.description).toBeTruthy();
      expect(entry.config_schema).toMatchObject({ type: 'object' });
      expect(entry.config_schema).not.toHaveProperty('additionalProperties');
    }
    const http = ACTION_CATALOG.find((a) => a.id === 'http_request')!.config_schema as { required: string[]; properties: Record<string, { enum?: string[]; minimum?: number; maximum?: number }> };
    expect(http.required).toEqual(['method', 'url']);
    expect(http.properties.method.enum).toEqual(['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'HEAD']);
    expect(http.properties.timeout_ms).toMatchObject({ minimum: 100, maximum: 60000 });
    expect(JSON.parse(JSON.stringify(ACTION_CATALOG))).toEqual(ACTION_CATALOG); // served as JSON as is
  });

  it('stepConfigSchema: one per step type and action, null for an unknown action', () => {
    for (const type of STEP_TYPES.filter((t) => t !== 'action')) expect(stepConfigSchema(type, null)).not.toBeNull();
    for (const id of ACTION_IDS) expect(stepConfigSchema('action', id)).not.toBeNull();
    for (const id of ['nope', 'constructor', '__proto__', 'toString', null]) expect(stepConfigSchema('action', id)).toBeNull();
    expect(stepConfigSchema('constructor' as StepType, null)).toBeNull();
  });
});

describe('step configs', () => {
  it('trigger: manual (also without trigger_subtype), webhook, schedule with cron and time zone, event with a name', () => {
    for (const config of [
      {},
      { trigger_subtype: 'manual' },
      { trigger_subtype: 'webhook' },
      { trigger_subtype: 'schedule', cron: '*/5 * * * *' },
      { trigger_subtype: 'schedule', cron: '0 9 * * MON-FRI', timezone: 'Europe/Berlin' },
      { trigger_subtype: 'schedule', cron: '0 0 12 1,15 * ?' },
      { trigger_subtype: 'event', event_name: 'invoice.paid' },
    ]) expect(checkOne(step('t', 'trigger', config)), JSON.stringify(config)).toEqual([]);

    const issues = (config: Record<string, unknown>) => checkOne(step('t', 'trigger', config)).map((i) => `${i.path} ${i.code}: ${i.message}`);
    expect(issues({ trigger_subtype: 'cron' })[0]).toMatch(/^steps\[0\]\.config\.trigger_subtype invalid_config/);
    expect(issues({ cron: '* * * * *' })).toEqual(['steps[0].config.cron invalid_config: only for schedule triggers']);
    expect(issues({ event_name: 'invoice.paid' })).toEqual(['steps[0].config.event_name invalid_config: only for event triggers']);
    expect(issues({ trigger_subtype: 'schedule' })).toEqual(['steps[0].config.cron invalid_config: is required for schedule triggers']);
    expect(issues({ trigger_subtype: 'schedule', cron: '* * *' })[0]).toContain('5 fields');
    expect(issues({ trigger_subtype: 'schedule', cron: '61 * * * *' })[0]).toContain('minute');
    expect(issues({ trigger_subtype: 'schedule', cron: '0 9 * * FOO' })[0]).toContain('day of week');
    expect(issues({ trigger_subtype: 'schedule', cron: '0 9 * * *', timezone: 'Mars/Olympus' })).toEqual([
      'steps[0].config.timezone invalid_config: not an IANA time zone (e.g. Europe/Berlin)',
    ]);
    expect(issues({ trigger_subtype: 'event' })).toEqual(['steps[0].config.event_name invalid_config: is required for event triggers']);
    expect(issues({ trigger_subtype: 'manual', cron: '* * * * *' })).toEqual(['steps[0].config.cron invalid_config: only for schedule triggers']);
    expect(issues({ trigger_subtype: 'manual', surprise: 1 })).toEqual([]);
  });

  it('cron shapes', () => {
    for (const ok of ['* * * * *', '0 0 1 1 *', '0-30/5 8-18 * JAN-MAR 1-5', '30 0 0 * * *', '0 0 * * 7', '0 0 ? * SUN']) expect(checkCron(ok), ok).toBeNull();
    for (const bad of ['', '* * * *', '* * * * * * *', '60 * * * *', '* 24 * * *', '* * 0 * *', '* * * 13 *', '* * * * 8', '5-1 * * * *', '*/0 * * * *', '? * * * *', 'L * * * *', '@daily']) {
      expect(checkCron(bad), bad).not.toBeNull();
    }
  });

  it('condition, switch, delay and loop', () => {
    expect(checkOne(step('c', 'condition', { expression: 'trigger.amount > 100' }))).toEqual([]);
    expect(codes(checkOne(step('c', 'condition', {})))).toEqual(['invalid_config']);
    expect(checkOne(step('c', 'condition', { expression: 'true', extra: 1 }))).toEqual([]);

    const sw = (config: Record<string, unknown>) => validateDefinition(wf(step('s', 'switch', config), end('a'), end('b')), 'draft');
    expect(sw({ expression: 'trigger.tier', cases: [{ value: 'gold', next_ref: 'a' }, { value: 2, next_ref: 'b' }], default_ref: 'b' })).toEqual([]);
    expect(sw({ expression: 'trigger.tier', cases: [] }).map((i) => i.path)).toEqual(['steps[0].config.cases']);
    expect(sw({ expression: 'trigger.tier', cases: [{ value: 'x', next_ref: 'a' }, { value: 'x', next_ref: 'b' }] }).map((i) => `${i.path}: ${i.message}`)).toEqual([
      'steps[0].config.cases[1].value: duplicate case value "x"',
    ]);
    expect(sw({ expression: 'trigger.tier', cases: [{ value: 'x', next: 'a' }] }).map((i) => `${i.path} ${i.code}`)).toEqual([
      'steps[0].config.cases[0].next_ref invalid_config',
    ]);

    for (const ok of [{ seconds: 60 }, { until: '2030-01-01T09:00:00Z' }, { until: '2030-01-01T09:00:00+02:00' }, { until: '{{trigger.due_at}}' }]) {
      expect(checkOne(step('d', 'delay', ok)), JSON.stringify(ok)).toEqual([]);
    }
    for (const bad of [{}, { seconds: 0 }, { seconds: 31_536_001 }, { seconds: 1.5 }, { seconds: 5, until: '2030-01-01T00:00:00Z' }, { until: 'tomorrow' }, { until: '2030-01-01' }]) {
      expect(codes(checkOne(step('d', 'delay', bad))), JSON.stringify(bad)).toContain('invalid_config');
    }

    const loop = (config: Record<string, unknown>) => validateDefinition(wf(step('l', 'loop', config), log('body')), 'draft');
    expect(loop({ items: 'trigger.items', step_ref: 'body' })).toEqual([]);
    expect(loop({ items: 'trigger.items', step_ref: 'body', max_iterations: 10_000 })).toEqual([]);
    expect(codes(loop({ items: 'trigger.items', step_ref: 'body', max_iterations: 10_001 }))).toEqual(['invalid_config']);
    expect(codes(loop({ items: 'trigger.items', step_ref: 'body', max_iterations: 0 }))).toEqual(['invalid_config']);
    expect(codes(loop({ step_ref: 'body' }))).toEqual(['invalid_config']);
  });

  it('ai_intent, ai_agent, approval and end', () => {
    expect(checkOne(step('i', 'ai_intent', { intent_id: '9b2f0c1e', input: { text: '{{trigger.text}}' } }))).toEqual([]);
    expect(checkOne(step('i', 'ai_intent', { domain: 'hiring', intent: 'resume-analysis', input: {} }))).toEqual([]);
    const intentIssues = (config: Record<string, unknown>) => checkOne(step('i', 'ai_intent', config)).map((i) => `${i.path}: ${i.message}`);
    expect(intentIssues({ input: {} })).toEqual(['steps[0].config: give either intent_id or domain and intent']);
    expect(intentIssues({ intent_id: 'x', domain: 'hiring', intent: 'y', input: {} })).toEqual(['steps[0].config: give either intent_id or domain and intent']);
    expect(intentIssues({ domain: 'hiring', input: {} })).toEqual(['steps[0].config.intent: is required with domain']);
    expect(intentIssues({ intent_id: 'x' })).toEqual([]); // the intent reads the run's input
    expect(intentIssues({ intent_id: 'x', input: 'text' })[0]).toMatch(/^steps\[0\]\.config\.input: /);

    expect(checkOne(step('g', 'ai_agent', { agent_key: 'support', message: '{{trigger.question}}' }))).toEqual([]);
    expect(codes(checkOne(step('g', 'ai_agent', { agent_key: 'Support Bot', message: 'hi' })))).toEqual(['invalid_config']);
    expect(codes(checkOne(step('g', 'ai_agent', { agent_key: 'support' })))).toEqual(['invalid_config']);

    expect(checkOne(step('p', 'approval', { message: 'Pay {{trigger.amount}}?', timeout_seconds: 3600 }))).toEqual([]);
    expect(codes(checkOne(step('p', 'approval', { message: '' })))).toEqual(['invalid_config']);

    expect(checkOne(step('e', 'end', { output: { total: '{{steps.sum.output}}' } })).map((i) => i.code)).toEqual(['unknown_step_reference']);
    expect(checkOne(step('e', 'end', { output: '{{trigger.name}}' }))).toEqual([]);
    expect(checkOne(step('e', 'end', { output: null }))).toEqual([]);
    expect(checkOne(step('e', 'end', {}))).toEqual([]); // the run's output is null
    expect(codes(checkOne({ ...step('e', 'end', { output: 1 }), config: null as never }))).toEqual(['invalid_config']);
  });
});

describe('actions', () => {
  const valid: Record<string, Record<string, unknown>> = {
    http_request: { method: 'POST', url: 'https://example.com/hook', headers: { 'X-Token': '{{state.token}}' }, body: { id: '{{trigger.id}}' }, timeout_ms: 5000 },
    set_state: { key: 'last_id', value: '{{trigger.id}}', ttl_seconds: 3600 },
    get_state: { key: 'user:{{trigger.user_id}}' },
    transform: { output: { name: '{{trigger.name}}', n: 1 } },
    wait_for_callback: { timeout_seconds: 600 },
    send_email: { to: 'a@example.com, b@example.org', subject: 'Hi', body: 'Run {{run.id}}' },
    log: { message: 'got {{trigger.attachments_text}}' },
  };
  const invalid: Record<string, [Record<string, unknown>, string][]> = {
    http_request: [
      [{ url: 'https://example.com' }, 'config.method'],
      [{ method: 'FETCH', url: 'https://example.com' }, 'config.method'],
      [{ method: 'GET', url: 'ftp://example.com' }, 'config.url'],
      [{ method: 'GET', url: 'not a url' }, 'config.url'],
      [{ method: 'GET', url: 'https://x.io', timeout_ms: 99 }, 'config.timeout_ms'],
      [{ method: 'GET', url: 'https://x.io', timeout_ms: 60_001 }, 'config.timeout_ms'],
      [{ method: 'GET', url: 'https://x.io', headers: { 'Bad Header': 'x' } }, 'config.headers["Bad Header"]'],
      [{ method: 'GET', url: 'https://x.io', headers: { A: 1 } }, 'config.headers.A'],
    ],
    set_state: [[{ key: 'k' }, 'config.value'], [{ value: 1 }, 'config.key'], [{ key: 'k', value: 1, ttl_seconds: 0 }, 'config.ttl_seconds']],
    get_state: [[{}, 'config.key'], [{ key: '' }, 'config.key']],
    transform: [[{}, 'config.output']],
    wait_for_callback: [[{ timeout_seconds: -1 }, 'config.timeout_seconds']],
    send_email: [[{ to: 'nobody', subject: 's', body: 'b' }, 'config.to'], [{ to: 'a@b.co', body: 'b' }, 'config.subject']],
    log: [[{}, 'config.message']],
  };

  it.each(ACTION_IDS)('%s: a valid config passes, invalid ones name the field', (id) => {
    expect(checkOne(action('a', id, valid[id]))).toEqual([]);
    for (const [config, path] of invalid[id]) {
      expect(checkOne(action('a', id, config)).map((i) => i.path), JSON.stringify(config)).toEqual([`steps[0].${path}`]);
    }
  });

  it('unknown config keys pass validation and are dropped at every level the schema describes; free-form values are kept as sent', () => {
    const http = { method: 'GET', url: 'https://x.io', proxy: 'x', headers: { 'X-A': ' a ' }, body: { any: { deep: 1 } } };
    expect(checkOne(action('a', 'http_request', http))).toEqual([]);
    expect(stripUnknownConfigKeys('action', 'http_request', http)).toEqual({ method: 'GET', url: 'https://x.io', headers: { 'X-A': ' a ' }, body: { any: { deep: 1 } } });
    expect(stripUnknownConfigKeys('action', 'log', { message: '  padded  ', level: 'debug' })).toEqual({ message: '  padded  ' });
    expect(stripUnknownConfigKeys('switch', null, { expression: 'trigger.x', cases: [{ value: 1, next_ref: 'a', next: 'b' }], extra: true })).toEqual({
      expression: 'trigger.x', cases: [{ value: 1, next_ref: 'a' }],
    });
    expect(stripUnknownConfigKeys('end', null, { output: { note: 'kept', nested: { also: 'kept' } }, extra: 1 })).toEqual({ output: { note: 'kept', nested: { also: 'kept' } } });
    expect(stripUnknownConfigKeys('ai_intent', null, { intent_id: 'hiring/resume-analysis', input: { resume_text: 'x', other: 1 }, model: 'y' })).toEqual({
      intent_id: 'hiring/resume-analysis', input: { resume_text: 'x', other: 1 },
    });
    expect(stripUnknownConfigKeys('trigger', null, { surprise: 1 })).toEqual({});
    // A config that does not fit is left as sent: validation names the problem.
    expect(stripUnknownConfigKeys('delay', null, { extra: 1 })).toEqual({ extra: 1 });
  });

  it('a template stands in for a URL or an address known only at run time', () => {
    expect(checkOne(action('a', 'http_request', { method: 'GET', url: '{{trigger.callback}}' }))).toEqual([]);
    expect(checkOne(action('a', 'send_email', { to: '{{trigger.email}}', subject: 's', body: 'b' }))).toEqual([]);
  });

  it('unknown, missing and misplaced action ids', () => {
    const issue = checkOne(action('a', 'ftp_upload', {}))[0];
    expect(issue).toEqual({ step_id: 'a', step_name: 'Step a', path: 'steps[0].action_id', code: 'unknown_action', message: expect.stringContaining('"ftp_upload"') });
    expect(codes(checkOne(action('a', 'constructor', {})))).toEqual(['unknown_action']);
    expect(codes(checkOne(step('a', 'action', { message: 'x' })))).toEqual(['missing_action_id']);
    expect(codes(checkOne(step('c', 'condition', { expression: 'true' }, { action_id: 'log' })))).toEqual(['unexpected_action_id']);
  });
});

describe('expressions and templates in definitions', () => {
  it('an expression that does not compile is an issue naming the step', () => {
    const steps = wf(
      trigger(),
      step('check', 'condition', { expression: 'trigger.amount >' }, { name: 'Big order?' }),
      step('route', 'switch', { expression: 'nope.tier', cases: [{ value: 1, next_ref: 'done' }] }),
      step('each', 'loop', { items: '"a" * 3', step_ref: 'done' }),
      end(),
    );
    const issues = validateDefinition(steps, 'draft');
    expect(issues.map((i) => [i.step_id, i.step_name, i.path, i.code])).toEqual([
      ['check', 'Big order?', 'steps[1].config.expression', 'invalid_expression'],
      ['route', 'Step route', 'steps[2].config.expression', 'invalid_expression'],
      ['each', 'Step each', 'steps[3].config.items', 'invalid_expression'],
    ]);
    expect(issues[0].message).toMatch(/^the expression does not compile: Unexpected token: EOF \(at character \d+\)$/);
    expect(issues[1].message).toContain('Unknown variable: nope');
    expect(issues[2].message).toContain('no such overload: string * int');
  });

  it('steps named by templates and expressions must exist; unknown template roots are flagged', () => {
    const steps = wf(
      trigger(),
      step('score', 'condition', { expression: 'steps.scoer.output.value >= 4 || steps["score"].status == "completed"' }),
      action('notify', 'log', { message: 'score {{steps.score.output.value}}, oops {{steps.nope.output}}, {{ user.name }}, left alone: {{ not a path }}' }),
    );
    expect(validateDefinition(steps, 'draft').map((i) => `${i.path} ${i.code}: ${i.message}`)).toEqual([
      'steps[1].config.expression unknown_step_reference: no step has the id "scoer"',
      'steps[2].config.message unknown_step_reference: no step has the id "nope"',
      'steps[2].config.message invalid_template: {{user.name}} names nothing (use trigger, steps, state, run or loop); it would be empty at run time',
    ]);
    // A macro variable named `steps` is not the steps map.
    expect(validateDefinition(wf(trigger(), step('c', 'condition', { expression: 'trigger.items.exists(steps, steps.x == 1.0)' })), 'draft')).toEqual([]);
    expect(findTemplatePlaceholders('{{trigger.a[0].b}} {{run.callback_url}} {{loop.item}}').map((p) => [p.root, p.valid])).toEqual([['trigger', true], ['run', true], ['loop', true]]);
  });

  it('a config nested without bound is refused, not walked', () => {
    let body: unknown = '{{foo}}';
    for (let d = 0; d < 100_000; d++) body = [body];
    expect(checkOne(action('a', 'transform', { output: body })).map((i) => `${i.code}: ${i.message}`)).toEqual(['invalid_config: nested more than 32 levels deep']);
  });

  it('templates are found anywhere in free-form values, with their path', () => {
    const s = action('a', 'http_request', { method: 'POST', url: 'https://x.io', body: { items: [{ ref: '{{steps.gone.output}}' }], 'odd key': '{{foo}}' } });
    expect(checkOne(s).map((i) => `${i.path} ${i.code}`).sort()).toEqual(['steps[0].config.body.items[0].ref unknown_step_reference', 'steps[0].config.body["odd key"] invalid_template']);
  });
});

describe('compileExpression and evaluation', () => {
  const user = { name: 'Ada' };
  const sample = vars({
    trigger: { amount: 150, country: 'DE', items: [1, 2, 3], count: 7, user },
    steps: { score: { output: { value: 4 } } },
    state: { token: 'abc' },
    run: { id: 'run-1' },
  });

  it('evaluates over trigger, steps, state and run', () => {
    expect(evaluate('trigger.amount > 100', sample)).toBe(true);
    expect(evaluate('trigger.amount > 200', sample)).toBe(false);
    expect(evaluate('steps.score.output.value >= 4 && trigger.country in ["DE", "FR"]', sample)).toBe(true);
    expect(evaluate('steps.score.output.value >= 4 && trigger.country in ["IT"]', sample)).toBe(false);
    expect(evaluate('state.token + "-" + run.id', sample)).toBe('abc-run-1');
    expect(evaluate('has(trigger.user.email) ? trigger.user.email : trigger.user.name', sample)).toBe('Ada');
    expect(evaluate('trigger.items.filter(x, x > 1.0)', sample)).toEqual([2, 3]);
  });

  it('gives plain JavaScript: integers as numbers while they are safe', () => {
    expect(evaluate('size(trigger.items)', sample)).toBe(3);
    expect(evaluate('[1, 2].map(x, x * 2)')).toEqual([2, 4]);
    expect(evaluate('1u + 2u')).toBe(3);
    expect(evaluate('9007199254740993')).toBe(9007199254740993n); // beyond 2^53: kept exact
    const map = evaluate('{"a": 1, "b": [2]}') as Record<string, unknown>;
    expect(map).toEqual({ a: 1, b: [2] });
    expect(Object.getPrototypeOf(map)).toBe(Object.prototype);
    expect(evaluate('trigger.user', sample)).toBe(user); // untouched input is not copied
    expect(evaluate('2.5 * 2.0')).toBe(5);
  });

  it('mixes JSON numbers (doubles) with integer literals', () => {
    expect(evaluate('trigger.amount + 1', sample)).toBe(151);
    expect(evaluate('trigger.amount / 4', sample)).toBe(37.5);
    expect(evaluate('2 * trigger.amount', sample)).toBe(300);
    expect(evaluate('trigger.count % 2 == 1', sample)).toBe(true);
  });

  it('evaluation errors are thrown as errors with a clear message', () => {
    const fail = (source: string) => {
      try {
        evaluate(source, sample);
      } catch (err) {
        expect(err).toBeInstanceOf(ExpressionError);
        expect(err).toBeInstanceOf(Error);
        return `${(err as ExpressionError).code}: ${(err as Error).message}`;
      }
      throw new Error(`${source} did not fail`);
    };
    expect(fail('trigger.missing > 1')).toMatch(/^no_such_key: No such key: missing/);
    expect(fail('steps.other.output')).toMatch(/^no_such_key: No such key: other/);
    expect(fail('trigger.country + 1')).toMatch(/^no_such_overload: no such overload: dyn<string> \+ int/);
    expect(fail('int("x")')).toMatch(/cannot convert to int/);
    expect(fail('9223372036854775807 + 1')).toMatch(/overflow/);
    expect(fail('trigger.items[10]')).toMatch(/index out of bounds/);
  });

  it('compiles once per source, refuses empty and overlong sources', () => {
    expect(compileExpression('trigger.a == 1')).toBe(compileExpression('trigger.a == 1'));
    expect(compileError('')).toBe('expression is empty');
    expect(compileError('   ')).toBe('expression is empty');
    expect(compileError(`"${'a'.repeat(MAX_EXPRESSION_LENGTH)}"`)).toContain(`longer than ${MAX_EXPRESSION_LENGTH}`);
    expect(compileError(42 as unknown as string)).toBe('expression must be a string');
  });
});

describe('hostile expressions', () => {
  it('cannot name anything but the workflow variables', () => {
    expect(compileError('process.exit()')).toContain('Unknown variable: process');
    expect(compileError('this.constructor')).toContain('Unknown variable: this');
    expect(compileError('globalThis.process')).toContain('Unknown variable: globalThis');
    expect(compileError('require("fs")')).toContain('require');
    expect(compileError('[1].constructor')).toBeTruthy();
    // `loop` is reserved in CEL: the loop item is for templates ({{loop.item}}) only.
    expect(compileError('loop.item')).toContain('Reserved identifier: loop');
  });

  it('cannot reach prototypes', () => {
    for (const source of ['trigger.__proto__', 'trigger["__proto__"]', 'trigger.constructor', 'trigger.constructor.constructor', 'trigger.toString', 'steps.hasOwnProperty']) {
      expect(() => evaluate(source, vars({ trigger: { a: 1 } })), source).toThrow(/No such key/);
    }
    expect(evaluate('has(trigger.__proto__)', vars({ trigger: {} }))).toBe(false);
    // A map literal with a __proto__ key neither sets a prototype nor pollutes Object.prototype.
    const result = evaluate('{"__proto__": {"polluted": true}}') as Record<string, unknown>;
    expect(result.polluted).toBeUndefined();
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it('cannot build huge values or nest without bound', () => {
    expect(compileError('"a" * 100000000')).toContain('no such overload');
    // String doubling needs nested cel.bind; four levels are refused.
    expect(compileError('cel.bind(a, "xx", cel.bind(b, a + a, cel.bind(c, b + b, cel.bind(d, c + c, size(d)))))')).toContain('nested more than 3 deep');
    expect(compileError('trigger.l.map(a, trigger.l.map(b, trigger.l.map(c, trigger.l.map(d, 1))))')).toContain('nested more than 3 deep');
    expect(compileError(`${'('.repeat(60)}1${')'.repeat(60)}`)).toContain('maxDepth');
    expect(compileError(`${'!'.repeat(200)}true`)).toContain('nested too deeply');
    expect(compileError(`${'-'.repeat(300)}1`)).toContain('nested too deeply');
    expect(compileError(`${'1+'.repeat(700)}1`)).toContain('maxAstNodes');
    expect(compileError(`[${Array.from({ length: 600 }, () => '1').join(',')}]`)).toContain('maxListElements');
  });

  it('a runaway evaluation (quadratic macros, catastrophic regex) stops at its deadline', () => {
    const big = vars({ trigger: { list: Array.from({ length: 3000 }, (_, i) => i), s: `${'a'.repeat(40)}!` } });
    const slow = compileExpression('trigger.list.map(a, trigger.list.map(b, trigger.list.filter(c, c == 1.0))).size()');
    const redos = compileExpression('trigger.s.matches("^(a+)+$")');
    for (const compiled of [slow, redos]) {
      if (!compiled.ok) throw new Error(compiled.error);
      // Named by the deadline's limit: without it both would run on (to a value, far later).
      expect(() => compiled.evaluate(big, { expression_ms: 50 })).toThrow(
        expect.objectContaining({ code: 'EXPRESSION_LIMIT', limit: 'expression_ms', max: 50, message: "the expression ran longer than the plan's expression_ms limit of 50 ms" }),
      );
    }
    // Still usable afterwards, guarded or not.
    expect(evaluate('trigger.list.exists(x, x == 2.0)', big)).toBe(true);
    expect(evaluate('trigger.s.matches("^a+!$")', big)).toBe(true);
  });
});

describe('graph rules', () => {
  const live = (...steps: StepDef[]) => validateDefinition(steps, 'live');
  const describeIssues = (issues: DefinitionIssue[]) => issues.map((i) => `${i.step_id ?? '-'} ${i.path} ${i.code}`);

  it('a chain by step_order is valid; the order is step_order, not array position', () => {
    expect(live(...wf(trigger(), log('a'), log('b'), end()))).toEqual([]);
    const shuffled = [{ ...end(), step_order: 30 }, { ...log('b'), step_order: 20 }, { ...trigger(), step_order: 0 }, { ...log('a'), step_order: 10 }];
    expect(live(...shuffled)).toEqual([]);
    expect([...findNextByOrder(shuffled)]).toEqual([['start', 'a'], ['a', 'b'], ['b', 'done'], ['done', null]]);
  });

  it('no steps, no trigger, two triggers', () => {
    expect(describeIssues(live())).toEqual(['- steps no_steps']);
    expect(describeIssues(live(...wf(log('a'), end())))).toEqual(['- steps missing_trigger']);
    expect(describeIssues(live(...wf(trigger('t1'), trigger('t2'), end())))).toEqual(['t2 steps[1].step_type multiple_triggers']);
  });

  it('references must resolve; duplicate ids are refused', () => {
    expect(describeIssues(live(...wf(trigger('start', { on_success_step_id: 'ghost' }), end())))).toEqual([
      'start steps[0].on_success_step_id unknown_step_reference',
      'done steps[1] unreachable_step',
    ]);
    expect(describeIssues(live(...wf(trigger(), log('a', { on_failure_step_id: 'ghost' }), end())))).toEqual(['a steps[1].on_failure_step_id unknown_step_reference']);
    expect(describeIssues(live(...wf(trigger(), log('a'), log('a'), end())))).toEqual(['a steps[2].id duplicate_step_id']);
  });

  it('every step must be reachable from the trigger', () => {
    const issues = live(...wf(trigger(), end(), log('orphan', { name: 'Orphan' })));
    expect(issues).toEqual([{ step_id: 'orphan', step_name: 'Orphan', path: 'steps[2]', code: 'unreachable_step', message: 'no path from the trigger leads to this step' }]);
    // An end step has no successor even by step_order; an on_success elsewhere skips the next step.
    expect(describeIssues(live(...wf(trigger('start', { on_success_step_id: 'b' }), log('a'), log('b'), end())))).toEqual(['a steps[1] unreachable_step']);
  });

  it('condition: true goes on, false without on_failure ends the run', () => {
    expect(live(...wf(trigger(), step('big', 'condition', { expression: 'trigger.amount > 100' }), log('notify'), end()))).toEqual([]);
    expect(live(...wf(trigger(), step('big', 'condition', { expression: 'true' }, { on_success_step_id: 'yes', on_failure_step_id: 'no' }), end('yes'), end('no')))).toEqual([]);
  });

  it('switch: its targets are reachable; it does not fall through or follow on_success', () => {
    const sw = (extra: Partial<StepDef> = {}) =>
      step('route', 'switch', { expression: 'trigger.tier', cases: [{ value: 'gold', next_ref: 'gold' }, { value: 'silver', next_ref: 'silver' }], default_ref: 'other' }, extra);
    expect(live(...wf(trigger(), sw(), end('gold'), end('silver'), end('other')))).toEqual([]);
    expect(describeIssues(live(...wf(trigger(), sw(), end('after'), end('gold'), end('silver'), end('other'))))).toEqual(['after steps[2] unreachable_step']);
    expect(describeIssues(live(...wf(trigger(), sw({ on_success_step_id: 'gold' }), end('gold'), end('silver'), end('other'))))).toEqual([
      'route steps[1].on_success_step_id unused_on_success',
    ]);
    expect(stepReferences(sw({ on_failure_step_id: 'other' }))).toEqual([
      { path: 'on_failure_step_id', id: 'other' },
      { path: 'config.cases[0].next_ref', id: 'gold' },
      { path: 'config.cases[1].next_ref', id: 'silver' },
      { path: 'config.default_ref', id: 'other' },
    ]);
    expect(describeIssues(validateDefinition(wf(trigger(), step('route', 'switch', { expression: 'trigger.tier', cases: [{ value: 1, next_ref: 'nowhere' }] })), 'draft'))).toEqual([
      'route steps[1].config.cases[0].next_ref unknown_step_reference',
    ]);
  });

  it('a cycle is an error, naming its steps', () => {
    const issues = live(...wf(trigger(), log('a', { on_success_step_id: 'b', name: 'A' }), log('b', { on_success_step_id: 'a', name: 'B' }), end()));
    expect(describeIssues(issues)).toEqual(['done steps[3] unreachable_step', 'a steps[1].on_success_step_id cycle']);
    expect(issues[1].message).toBe('these steps form a cycle that does not go through a loop body: "A" -> "B" -> "A"');
    expect(describeIssues(live(...wf(trigger(), log('self', { on_success_step_id: 'self' }))))).toEqual(['self steps[1].on_success_step_id cycle']);
    // Through on_failure and the implicit next step too.
    expect(describeIssues(live(...wf(trigger(), log('a'), log('b', { on_failure_step_id: 'a' }), end())))).toEqual(['a steps[1].step_order cycle']);
  });

  it('a loop may come back to its loop step through its body', () => {
    const body = log('body', { on_success_step_id: 'each' });
    expect(live(...wf(trigger(), step('each', 'loop', { items: 'trigger.items', step_ref: 'body' }, { on_success_step_id: 'done' }), body, end()))).toEqual([]);
    // Without on_success the loop's exit is the next step by order: its own body, which leads back: a real cycle.
    expect(describeIssues(live(...wf(trigger(), step('each', 'loop', { items: 'trigger.items', step_ref: 'body' }), body, end())))).toEqual([
      'done steps[3] unreachable_step',
      'each steps[1].step_order cycle',
    ]);
    // A cycle inside the body that does not use the body edge is still an error.
    expect(codes(live(...wf(trigger(), step('each', 'loop', { items: 'trigger.items', step_ref: 'b1' }, { on_success_step_id: 'done' }), log('b1', { on_success_step_id: 'b2' }), log('b2', { on_success_step_id: 'b1' }), end())))).toEqual(['cycle']);
    expect(codes(live(...wf(trigger(), step('each', 'loop', { items: 'trigger.items', step_ref: 'each' }, { on_success_step_id: 'done' }), end())))).toEqual(['invalid_loop_body']);
  });

  it('end steps have no on_success; nothing leads back to the trigger', () => {
    expect(describeIssues(live(...wf(trigger(), end('done', { on_success_step_id: 'more' }), end('more'))))).toEqual([
      'done steps[1].on_success_step_id end_has_successor',
      'more steps[2] unreachable_step',
    ]);
    expect(describeIssues(live(...wf(trigger(), log('a', { on_failure_step_id: 'start' }), end())))).toEqual([
      'a steps[1].on_failure_step_id reference_to_trigger',
      'start steps[0].step_order cycle',
    ]);
  });

  it('draft checks steps one by one; live adds the graph rules', () => {
    const steps = wf(log('a', { on_success_step_id: 'a' }), end('done', { on_success_step_id: 'a' }), log('stray'));
    expect(validateDefinition(steps, 'draft')).toEqual([]);
    expect(describeIssues(validateDefinition(steps, 'live'))).toEqual([
      '- steps missing_trigger',
      'done steps[1].on_success_step_id end_has_successor',
      'a steps[0].on_success_step_id cycle',
    ]);
    expect(validateDefinition([], 'draft')).toEqual([]);
    // Both modes report every problem, not just the first.
    const broken = wf(trigger(), action('x', 'nope', {}), step('c', 'condition', { expression: '1 +' }, { on_failure_step_id: 'ghost' }), step('d', 'delay', {}));
    expect(codes(validateDefinition(broken, 'draft'))).toEqual(['unknown_action', 'invalid_expression', 'unknown_step_reference', 'invalid_config']);
  });

  it('stays linear on a long chain', () => {
    // Counted, not timed: the reads of the steps' fields the validator makes, for a chain of n and
    // of 2n steps. Linear work doubles them; a pass per step over the others would quadruple them.
    const readsFor = (n: number) => {
      let reads = 0;
      const chain = wf(trigger(), ...Array.from({ length: n }, (_, i) => log(`s${i}`)), end()).map(
        (s) =>
          new Proxy(s, {
            get(target, key, receiver) {
              reads++;
              return Reflect.get(target, key, receiver);
            },
          }),
      );
      expect(validateDefinition(chain, 'live')).toEqual([]);
      return reads;
    };
    const n = 2500;
    const [once, twice] = [readsFor(n), readsFor(2 * n)];
    expect(once).toBeGreaterThan(n);
    expect(twice / once).toBeLessThan(2.5);
  });
});
