// Precision and recall floors of the guardrail detectors on the labelled dataset
// (test/guardrails/dataset.ts). The `dev` split is what the rules were developed against, so its
// floors guard against regressions; the `holdout` split was written after the rules were frozen,
// so its floors are the honest ones (prompt-injection recall on new phrasings is low: see the
// README section "Guardrails quality").
import { describe, expect, it } from 'vitest';
import { PII_ENTITIES } from '../../server/guardrails/guardrails.types.js';
import { DATASET, type GuardrailCase } from './dataset.js';
import { DETECTORS, evaluate, type Evaluation } from './evaluate.js';

const dev = DATASET.filter((c) => c.split === 'dev');
const holdout = DATASET.filter((c) => c.split === 'holdout');

const FLOORS = {
  dev: { perDetector: { precision: 0.95, recall: 0.9 }, overall: { precision: 0.97, recall: 0.95 } },
  holdout: { pii: { precision: 0.9, recall: 0.9 }, injection: { precision: 0.9, recall: 0.2 } },
  all: { overall: { precision: 0.95, recall: 0.9 } },
  /** Share of hard negatives on which any detector fires. */
  hardNegativeFalsePositiveRate: 0.02,
};

function floorFailures(e: Evaluation): string[] {
  const failures: string[] = [];
  for (const d of DETECTORS) {
    const s = e.byDetector[d];
    if (s.precision < FLOORS.dev.perDetector.precision) failures.push(`${d} precision ${s.precision.toFixed(3)}`);
    if (s.recall < FLOORS.dev.perDetector.recall) failures.push(`${d} recall ${s.recall.toFixed(3)}`);
  }
  if (e.overall.precision < FLOORS.dev.overall.precision) failures.push(`overall precision ${e.overall.precision.toFixed(3)}`);
  if (e.overall.recall < FLOORS.dev.overall.recall) failures.push(`overall recall ${e.overall.recall.toFixed(3)}`);
  return failures;
}

describe('guardrails dataset', () => {
  it('has at least 240 cases, 40% of them hard negatives, and positives for every entity and for injection', () => {
    expect(DATASET.length).toBeGreaterThanOrEqual(240);
    expect(DATASET.filter((c) => c.hardNegative).length / DATASET.length).toBeGreaterThanOrEqual(0.4);
    for (const entity of PII_ENTITIES) {
      expect(dev.filter((c) => c.expected.pii.includes(entity)).length, entity).toBeGreaterThanOrEqual(8);
      expect(holdout.some((c) => c.expected.pii.includes(entity)), `${entity} in holdout`).toBe(true);
    }
    expect(DATASET.filter((c) => c.expected.injection).length).toBeGreaterThanOrEqual(60);
    expect(DATASET.filter((c) => c.hardNegative && !c.expected.injection && c.expected.pii.length === 0).length).toBeGreaterThanOrEqual(100);
    expect(holdout.length).toBeGreaterThanOrEqual(50);
  });

  it('has unique ids and no duplicate texts', () => {
    expect(new Set(DATASET.map((c) => c.id)).size).toBe(DATASET.length);
    expect(new Set(DATASET.map((c) => c.text)).size).toBe(DATASET.length);
  });
});

describe('guardrails quality', () => {
  it('dev split: every detector at precision >= 0.95 and recall >= 0.9; overall 0.97 / 0.95', () => {
    const e = evaluate(dev);
    expect(floorFailures(e), JSON.stringify(e.misses)).toEqual([]);
  });

  it('holdout split (written after the rules were frozen): PII >= 0.9 / 0.9, injection precision >= 0.9, recall >= 0.2', () => {
    const e = evaluate(holdout);
    expect(e.pii.precision).toBeGreaterThanOrEqual(FLOORS.holdout.pii.precision);
    expect(e.pii.recall).toBeGreaterThanOrEqual(FLOORS.holdout.pii.recall);
    expect(e.byDetector.injection.precision).toBeGreaterThanOrEqual(FLOORS.holdout.injection.precision);
    expect(e.byDetector.injection.recall).toBeGreaterThanOrEqual(FLOORS.holdout.injection.recall);
  });

  it('whole dataset: overall precision >= 0.95 and recall >= 0.9', () => {
    const e = evaluate();
    expect(e.overall.precision).toBeGreaterThanOrEqual(FLOORS.all.overall.precision);
    expect(e.overall.recall).toBeGreaterThanOrEqual(FLOORS.all.overall.recall);
  });

  it('fires on at most 2% of the hard negatives', () => {
    const negatives = DATASET.filter((c) => c.hardNegative && !c.expected.injection && c.expected.pii.length === 0);
    const e = evaluate(negatives);
    const firing = new Set(e.misses.filter((m) => m.kind === 'FP').map((m) => m.id));
    expect(firing.size / negatives.length, [...firing].join(', ')).toBeLessThanOrEqual(FLOORS.hardNegativeFalsePositiveRate);
  });

  it('the floors can fail: a dataset with swapped labels scores below them', () => {
    // Hard negatives relabelled as positives and positives as negatives: precision and recall collapse.
    const swapped: GuardrailCase[] = dev.map((c) =>
      c.expected.injection || c.expected.pii.length > 0
        ? { ...c, expected: { pii: [], injection: false } }
        : { ...c, expected: { pii: ['phone'], injection: true } },
    );
    const failures = floorFailures(evaluate(swapped));
    expect(failures.some((f) => f.startsWith('overall precision'))).toBe(true);
    expect(failures.some((f) => f.startsWith('injection recall'))).toBe(true);
  });
});
