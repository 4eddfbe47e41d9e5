// Scores the detectors on the labelled dataset: per PII entity and for injection, case-level
// true/false positives and false negatives (an entity counts once per case).
import { PII_ENTITIES, type PiiEntity } from '../../server/guardrails/guardrails.types.js';
import { detectInjection } from '../../server/guardrails/injection.js';
import { detectPii } from '../../server/guardrails/pii.js';
import { DATASET, type GuardrailCase } from './dataset.js';

export type Detector = PiiEntity | 'injection';
export const DETECTORS: Detector[] = [...PII_ENTITIES, 'injection'];

export interface Score {
  tp: number;
  fp: number;
  fn: number;
  precision: number;
  recall: number;
}

export interface Miss {
  id: string;
  detector: Detector;
  kind: 'FP' | 'FN';
}

export interface Evaluation {
  cases: number;
  hardNegatives: number;
  byDetector: Record<Detector, Score>;
  pii: Score;
  overall: Score;
  misses: Miss[];
  /** Mean time per case (both detectors), in milliseconds. */
  msPerCase: number;
}

const score = (tp: number, fp: number, fn: number): Score => ({
  tp,
  fp,
  fn,
  precision: tp + fp === 0 ? 1 : tp / (tp + fp),
  recall: tp + fn === 0 ? 1 : tp / (tp + fn),
});

export function evaluate(dataset: GuardrailCase[] = DATASET): Evaluation {
  const counts = Object.fromEntries(DETECTORS.map((d) => [d, { tp: 0, fp: 0, fn: 0 }])) as Record<Detector, { tp: number; fp: number; fn: number }>;
  const misses: Miss[] = [];
  const started = performance.now();
  for (const c of dataset) {
    const found = new Set<Detector>(detectPii(c.text).map((m) => m.entity));
    if (detectInjection(c.text).detected) found.add('injection');
    const expected = new Set<Detector>(c.expected.pii);
    if (c.expected.injection) expected.add('injection');
    for (const d of DETECTORS) {
      if (found.has(d) && expected.has(d)) counts[d].tp++;
      else if (found.has(d)) {
        counts[d].fp++;
        misses.push({ id: c.id, detector: d, kind: 'FP' });
      } else if (expected.has(d)) {
        counts[d].fn++;
        misses.push({ id: c.id, detector: d, kind: 'FN' });
      }
    }
  }
  const elapsed = performance.now() - started;
  const byDetector = Object.fromEntries(DETECTORS.map((d) => [d, score(counts[d].tp, counts[d].fp, counts[d].fn)])) as Record<Detector, Score>;
  const sum = (list: Detector[]) => {
    const t = list.reduce((acc, d) => ({ tp: acc.tp + counts[d].tp, fp: acc.fp + counts[d].fp, fn: acc.fn + counts[d].fn }), { tp: 0, fp: 0, fn: 0 });
    return score(t.tp, t.fp, t.fn);
  };
  return {
    cases: dataset.length,
    hardNegatives: dataset.filter((c) => c.hardNegative).length,
    byDetector,
    pii: sum([...PII_ENTITIES]),
    overall: sum(DETECTORS),
    misses,
    msPerCase: elapsed / dataset.length,
  };
}

/** A Markdown table of the evaluation. */
export function formatTable(e: Evaluation): string {
  const pct = (x: number) => x.toFixed(3);
  const row = (name: string, s: Score) => `| ${name} | ${s.tp} | ${s.fp} | ${s.fn} | ${pct(s.precision)} | ${pct(s.recall)} |`;
  return [
    '| detector | TP | FP | FN | precision | recall |',
    '|---|---:|---:|---:|---:|---:|',
    ...DETECTORS.map((d) => row(d, e.byDetector[d])),
    row('**PII (all entities)**', e.pii),
    row('**overall**', e.overall),
  ].join('\n');
}
