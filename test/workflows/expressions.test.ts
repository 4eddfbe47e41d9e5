// Unit tests of the limits every CEL evaluation and template rendering keeps to
// (server/workflows/expression-limits.ts, expressions.ts, engine/templates.ts): each operator or
// function that copies or builds fails before building past expression_result_size, every
// evaluation (macros or not) stops at expression_ms, and templates cap what they fill in.
import { describe, expect, it, vi } from 'vitest';
import type { AppDeps } from '../../server/deps.js';
import { runCustomScorer, ScorerError } from '../../server/evals/custom-scorer.js';
import { LimitExceededError } from '../../server/tenants/plan-limits.js';
import { renderTemplate } from '../../server/common/templates.js';
import { BUILT_TOTAL_FACTOR, DEFAULT_EXPRESSION_LIMITS } from '../../server/workflows/expression-limits.js';
import { MAX_DURATION_LENGTH } from '../../server/workflows/meter-cel-tree.js';
import { compileExpression, type EvaluateOptions } from '../../server/workflows/expressions.js';

const MAX = 1000;
// A deadline no loaded machine reaches: the tests of the deadline pass their own.
const small: EvaluateOptions = { expression_result_size: MAX, expression_ms: 10_000 };

function evaluate(source: string, trigger: Record<string, unknown> = {}, options: EvaluateOptions = small): unknown {
  const compiled = compileExpression(source);
  if (!compiled.ok) throw new Error(`does not compile: ${compiled.error}`);
  return compiled.evaluate({ trigger, steps: {}, state: {}, run: {} }, options);
}

/** The limit error an evaluation ends with (fails the test when it ends otherwise). */
function limitOf(source: string, trigger: Record<string, unknown> = {}, options: EvaluateOptions = small): LimitExceededError {
  try {
    evaluate(source, trigger, options);
  } catch (err) {
    if (err instanceof LimitExceededError) return err;
    throw err;
  }
  throw new Error(`${source} did not reach a limit`);
}

const sizeLimit = (what: string) =>
  expect.objectContaining({ code: 'EXPRESSION_LIMIT', limit: 'expression_result_size', max: MAX, message: expect.stringContaining(`would build ${what}`) });

const text = (n: number, ch = 'a') => ch.repeat(n);
const list = (n: number) => Array.from({ length: n }, (_, i) => i);

describe('expression_result_size: every operator and function that builds', () => {
  it('list + list, string + string, bytes + bytes: checked on the operands, before the copy', () => {
    expect(evaluate('size(trigger.l + trigger.l)', { l: list(500) })).toBe(1000);
    expect(limitOf('trigger.l + trigger.l', { l: list(501) })).toEqual(sizeLimit('a list of 1,002 elements'));
    expect(limitOf('trigger.l + trigger.l', { l: list(501) }).message).toBe(
      "the expression would build a list of 1,002 elements, over the plan's expression_result_size limit of 1,000",
    );
    expect(evaluate('size(trigger.s + trigger.s)', { s: text(500) })).toBe(1000);
    expect(limitOf('trigger.s + trigger.s', { s: text(501) })).toEqual(sizeLimit('a string of 1,002 characters'));
    expect(evaluate('size(bytes(trigger.s) + bytes(trigger.s))', { s: text(500) })).toBe(1000);
    expect(limitOf('bytes(trigger.s) + bytes(trigger.s)', { s: text(501) })).toEqual(sizeLimit('bytes of 1,002 bytes'));
    // Numbers add as before.
    expect(evaluate('trigger.n + 1', { n: 1.5 })).toBe(2.5);
  });

  it('doubling a large list stops at the first level over the cap, whatever the depth of the tree', () => {
    const doubled = (terms: number): string => (terms === 1 ? 'trigger.l' : `(${doubled(terms / 2)} + ${doubled(terms / 2)})`);
    // A deadline no busy machine reaches: this is about the size check, which stops after two copies.
    const err = limitOf(`size(${doubled(256)})`, { l: list(300_000) }, { ...DEFAULT_EXPRESSION_LIMITS, expression_ms: 60_000 });
    expect(err.message).toBe("the expression would build a list of 1,200,000 elements, over the plan's expression_result_size limit of 1,000,000");
  });

  it('string functions: join, split, lowerAscii, upperAscii, trim, substring', () => {
    expect(evaluate('trigger.parts.join(",").size()', { parts: ['ab', 'cd'] })).toBe(5);
    expect(limitOf('trigger.parts.join(",")', { parts: Array(334).fill('ab') })).toEqual(sizeLimit('a string of 1,001 characters'));
    expect(limitOf('trigger.parts.join()', { parts: Array(501).fill('ab') })).toEqual(sizeLimit('a string of 1,002 characters'));
    expect(evaluate('trigger.s.split(",").size()', { s: `${text(2000, 'x')},y` })).toBe(2);
    expect(limitOf('trigger.s.split(",")', { s: ','.repeat(1000) })).toEqual(sizeLimit('a list of 1,001 elements'));
    expect(limitOf('trigger.s.split("")', { s: text(1001) })).toEqual(sizeLimit('a list of 1,001 elements'));
    expect(evaluate('trigger.s.split(",", 2).size()', { s: ','.repeat(50) })).toBe(2);
    // cel-js splits the whole text before keeping two parts: all of them count.
    expect(limitOf('trigger.s.split(",", 2)', { s: ','.repeat(5000) })).toEqual(sizeLimit('a list of 1,001 elements'));
    for (const fn of ['lowerAscii()', 'upperAscii()', 'trim()', 'substring(0)']) {
      expect(evaluate(`trigger.s.${fn}.size()`, { s: text(1000) })).toBe(1000);
      expect(limitOf(`trigger.s.${fn}`, { s: text(1001) }), fn).toEqual(sizeLimit('a string of 1,001 characters'));
    }
    expect(evaluate('trigger.s.substring(10, 20)', { s: text(5000) })).toBe(text(10));
  });

  it('bytes: bytes(string) by its UTF-8 length, hex, base64, string(bytes)', () => {
    expect(limitOf('bytes(trigger.s)', { s: text(334, '€') })).toEqual(sizeLimit('bytes of 1,002 bytes'));
    expect(evaluate('size(bytes(trigger.s))', { s: text(333, '€') })).toBe(999);
    expect(limitOf('bytes(trigger.s).hex()', { s: text(501) })).toEqual(sizeLimit('a string of 1,002 characters'));
    expect(evaluate('bytes(trigger.s).hex().size()', { s: text(500) })).toBe(1000);
    expect(limitOf('bytes(trigger.s).base64()', { s: text(751) })).toEqual(sizeLimit('a string of 1,004 characters'));
    expect(evaluate('string(bytes(trigger.s)) == trigger.s', { s: text(1000) })).toBe(true);
  });

  it('map and filter results grow one checked element at a time; filter over a longer list is fine while its result fits', () => {
    expect(evaluate('trigger.l.map(x, x * 2.0).size()', { l: list(1000) })).toBe(1000);
    expect(limitOf('trigger.l.map(x, x)', { l: list(1001) })).toEqual(sizeLimit('a list of 1,001 elements'));
    expect(limitOf('trigger.l.map(x, true, x)', { l: list(1001) })).toEqual(sizeLimit('a list of 1,001 elements'));
    expect(limitOf('trigger.l.filter(x, x >= 0.0)', { l: list(1001) })).toEqual(sizeLimit('a list of 1,001 elements'));
    expect(evaluate('trigger.l.filter(x, x < 3.0)', { l: list(5000) })).toEqual([0, 1, 2]);
  });

  it('everything one evaluation builds counts together, up to BUILT_TOTAL_FACTOR times the cap: literals in a macro body too', () => {
    expect(BUILT_TOTAL_FACTOR).toBe(4);
    // Each map literal has 2 entries, each list 3 elements, and the map's result one more per item.
    expect(evaluate('trigger.l.map(x, {"a": x, "b": [x, x, x]}).size()', { l: list(600) })).toBe(600);
    const err = limitOf('trigger.l.map(x, {"a": x, "b": [x, x, x]}).size()', { l: list(1000) });
    expect(err).toMatchObject({ limit: 'expression_result_size', max: MAX });
    expect(err.message).toBe("the expression would build more than 4,000 elements, entries and characters in all, over 4 times the plan's expression_result_size limit of 1,000");
    // Five lists of 900, each under the cap, are too much together.
    expect(limitOf('[trigger.l + [1], trigger.l + [2], trigger.l + [3], trigger.l + [4], trigger.l + [5]]', { l: list(899) }).message).toContain('in all');
    // A string `+` links its two sides without copying them: capped in length, one unit towards the total.
    expect(evaluate('trigger.l.map(x, trigger.s + trigger.s).size()', { l: list(1000), s: text(400) })).toBe(1000);
    expect(limitOf('trigger.l.map(x, trigger.s + trigger.s)', { l: list(10), s: text(501) })).toEqual(sizeLimit('a string of 1,002 characters'));
    // upperAscii copies: each copy counts in full.
    expect(limitOf('trigger.l.map(x, trigger.s.upperAscii())', { l: list(1000), s: text(400) }).message).toContain('in all');
  });

  it('a limit swallowed by ||, && or exists still fails the evaluation', () => {
    const big = { l: list(600) };
    expect(limitOf('size(trigger.l + trigger.l) > 0 || true', big)).toEqual(sizeLimit('a list of 1,200 elements'));
    expect(limitOf('size(trigger.l + trigger.l) > 0 && false', big)).toEqual(sizeLimit('a list of 1,200 elements'));
    expect(limitOf('[1, 2].exists(x, x == 2 || size(trigger.l + trigger.l) > 0)', big)).toEqual(sizeLimit('a list of 1,200 elements'));
    expect(limitOf('[1, 2].all(x, x == 1 && size(trigger.l + trigger.l) > 0)', big)).toEqual(sizeLimit('a list of 1,200 elements'));
    // Limits are per evaluation: the same expression works on a small input afterwards.
    expect(evaluate('size(trigger.l + trigger.l) > 0 || true', { l: [1] })).toBe(true);
  });

  it('the trial plan\'s cap applies when the caller passes none', () => {
    expect(DEFAULT_EXPRESSION_LIMITS).toEqual({ expression_ms: 100, expression_result_size: 1_000_000 });
    expect(limitOf('trigger.s + trigger.s', { s: text(500_001) }, {})).toMatchObject({ max: 1_000_000 });
  });

  it('a result holding one value many times is converted once and keeps sharing it', () => {
    const result = evaluate('trigger.l.map(x, trigger.l)', { l: list(900) }) as unknown[];
    expect(result).toHaveLength(900);
    expect(result[0]).toBe(result[899]);
  });
});

describe('expression_ms: every evaluation has a deadline', () => {
  // The limit named in the error is the oracle: without the deadline each of these would finish
  // (much later) with a value or another error, never with expression_ms.
  const timedOut = (source: string, trigger: Record<string, unknown>, ms = 50) => ({ err: limitOf(source, trigger, { expression_ms: ms }) });

  it('a macro-free expression doing a lot of bounded work stops at the deadline', () => {
    // 128 code-point counts of a 2 MB string: about a second of work, with no macro and nothing built.
    const sum = (terms: number): string => (terms === 1 ? 'size(trigger.s)' : `(${sum(terms / 2)} + ${sum(terms / 2)})`);
    const source = sum(128);
    const { err } = timedOut(source, { s: text(2_000_000) });
    expect(err).toMatchObject({ code: 'EXPRESSION_LIMIT', limit: 'expression_ms', max: 50, message: "the expression ran longer than the plan's expression_ms limit of 50 ms" });
  });

  it('nested macros stop at the deadline without the watchdog', () => {
    const { err } = timedOut('trigger.l.map(a, trigger.l.map(b, trigger.l.exists(c, c < 0.0))).size()', { l: list(2000) });
    expect(err.limit).toBe('expression_ms');
  });

  it('a comparison of two large nested values (cel-js walks them in one call) is interrupted', () => {
    // 10,000 x 10,000 element comparisons in one `==`; the lists are equal but not the same objects.
    const { err } = timedOut('trigger.a.map(x, trigger.a) == trigger.b.map(x, trigger.b)', { a: list(10_000), b: list(10_000) });
    expect(err.limit).toBe('expression_ms');
    // Small comparisons are untouched, and the expression still works after being interrupted.
    expect(evaluate('trigger.a.map(x, trigger.a) == trigger.b.map(x, trigger.b)', { a: list(3), b: list(3) })).toBe(true);
    expect(evaluate('[trigger.a] == [trigger.b]', { a: list(3), b: [0, 1, 3] })).toBe(false);
    expect(evaluate('trigger.a in [trigger.b]', { a: list(3), b: list(3) })).toBe(true);
  });

  it('a catastrophic regular expression is interrupted', () => {
    const { err } = timedOut('trigger.s.matches("^(a+)+$")', { s: `${text(40)}!` });
    expect(err.limit).toBe('expression_ms');
  });

  it('duration() refuses strings longer than a duration can be (cel-js parses them in cubic time)', () => {
    expect(evaluate('duration(trigger.d) == duration("90m")', { d: '1h30m' })).toBe(true);
    // Refused by length, before cel-js's parser sees it.
    expect(() => evaluate('duration(trigger.d)', { d: '1'.repeat(10_000) })).toThrow(`duration() accepts at most ${MAX_DURATION_LENGTH} characters`);
    expect(() => evaluate('duration(trigger.d)', { d: '1'.repeat(MAX_DURATION_LENGTH + 1) })).toThrow(`duration() accepts at most ${MAX_DURATION_LENGTH} characters`);
  });

  it('ordinary evaluation errors stay ExpressionErrors', () => {
    expect(() => evaluate('trigger.missing > 1')).toThrow(expect.objectContaining({ name: 'ExpressionError', code: 'no_such_key' }));
  });
});

describe('templates: what rendering builds is capped', () => {
  const scope = (trigger: Record<string, unknown>) => ({ trigger, steps: {}, state: {}, run: {} });
  const limit = (value: unknown, trigger: Record<string, unknown>, max = MAX) => {
    try {
      renderTemplate(value, scope(trigger), { expression_result_size: max });
    } catch (err) {
      if (err instanceof LimitExceededError) return err;
      throw err;
    }
    throw new Error('the template rendered within the cap');
  };

  it('a string filled from several placeholders', () => {
    expect(renderTemplate('{{trigger.s}}-{{trigger.s}}', scope({ s: text(499) }), { expression_result_size: MAX })).toBe(`${text(499)}-${text(499)}`);
    const err = limit('{{trigger.s}}-{{trigger.s}}', { s: text(500) });
    expect(err).toMatchObject({ code: 'EXPRESSION_LIMIT', limit: 'expression_result_size', max: MAX });
    expect(err.message).toBe(
      "the rendered template would be larger than the plan's expression_result_size limit of 1,000 (characters of its strings and entries of its lists and maps, together)",
    );
  });

  it('an object placed in text is measured before it is serialised', () => {
    expect(renderTemplate('items: {{trigger.l}}', scope({ l: [1, 2] }))).toBe('items: [1,2]');
    const big = list(1_000_000);
    const stringify = vi.spyOn(JSON, 'stringify');
    try {
      expect(limit('items: {{trigger.l}}', { l: big }).limit).toBe('expression_result_size');
      expect(stringify.mock.calls.filter(([value]) => value === big)).toEqual([]);
    } finally {
      stringify.mockRestore();
    }
  });

  it('the total of a rendered object: many strings, each under the cap', () => {
    const config = Object.fromEntries(Array.from({ length: 5 }, (_, i) => [`f${i}`, 'x {{trigger.s}}']));
    expect(Object.keys(renderTemplate(config, scope({ s: text(190) }), { expression_result_size: MAX }) as object)).toHaveLength(5);
    expect(limit(config, { s: text(300) }).limit).toBe('expression_result_size');
  });

  it('a whole-string placeholder builds nothing: a large value passes as it is; the trial plan\'s cap by default', () => {
    const big = list(2_000_000);
    expect(renderTemplate({ all: '{{trigger.l}}', first: '{{trigger.l[0]}}' }, scope({ l: big }))).toEqual({ all: big, first: 0 });
    expect((renderTemplate({ all: '{{trigger.l}}' }, scope({ l: big })) as { all: unknown }).all).toBe(big);
    expect(limit('{{trigger.s}}{{trigger.s}}', { s: text(500_001) }, 1_000_000).max).toBe(1_000_000);
    expect(() => renderTemplate('{{trigger.s}}{{trigger.s}}', scope({ s: text(500_001) }))).toThrow(LimitExceededError);
    expect(renderTemplate('{{trigger.s}}{{trigger.s}}', scope({ s: text(500_000) }))).toHaveLength(1_000_000);
  });
});

describe('the eval custom scorer', () => {
  const deps = {} as AppDeps;
  const scorerCase = (input: Record<string, unknown>) => ({ runId: 'run-1', caseId: null, input, output: 'answer', expected: null, judge: null });

  it('evaluates under the plan\'s limits: a limit is the case\'s ScorerError', async () => {
    const scorer = { kind: 'expression' as const, source: 'size(input.l + input.l)', limits: { expression_ms: 50, expression_result_size: MAX } };
    await expect(runCustomScorer(deps, scorer, scorerCase({ l: list(10) }))).resolves.toBe(20);
    const failed = runCustomScorer(deps, scorer, scorerCase({ l: list(600) }));
    await expect(failed).rejects.toBeInstanceOf(ScorerError);
    await expect(failed).rejects.toThrow(
      "the custom scorer expression stopped at a limit (EXPRESSION_LIMIT): the expression would build a list of 1,200 elements, over the plan's expression_result_size limit of 1,000",
    );
  });
});
