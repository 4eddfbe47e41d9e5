// Precision and recall of the guardrail detectors on the labelled dataset in
// test/guardrails/dataset.ts, per split: `dev` (the cases the rules were developed against) and
// `holdout` (written after the rules were frozen: the honest estimate; its labelled tax-id cases
// were written with their rule, so it is also reported without them).
// Run: node bin/run-ts.mjs test/bench/guardrails-quality.ts   (--misses lists the wrong cases)
import { DATASET, TAX_IDS, type GuardrailCase } from '../guardrails/dataset.js';
import { evaluate, formatTable } from '../guardrails/evaluate.js';

function report(title: string, cases: GuardrailCase[]) {
  const result = evaluate(cases);
  const positives = cases.filter((c) => c.expected.injection || c.expected.pii.length > 0).length;
  console.log(`\n### ${title}\n`);
  console.log(
    `${result.cases} cases: ${positives} with PII or injection, ${result.hardNegatives} hard negatives (${((100 * result.hardNegatives) / result.cases).toFixed(0)}%), ${result.cases - positives - result.hardNegatives} plain negatives; ${result.msPerCase.toFixed(2)} ms per case\n`,
  );
  console.log(formatTable(result));
  if (process.argv.includes('--misses') && result.misses.length > 0) {
    console.log('\nMisses:');
    for (const miss of result.misses) {
      const text = cases.find((c) => c.id === miss.id)!.text.replace(/\n/g, '\\n');
      console.log(`  ${miss.kind} ${miss.detector.padEnd(12)} ${miss.id.padEnd(14)} ${text.slice(0, 110)}`);
    }
  }
}

const taxIds = new Set(TAX_IDS.map((c) => c.id));
report('holdout (written after the rules were frozen)', DATASET.filter((c) => c.split === 'holdout'));
report('holdout without the labelled tax-id cases (those were written with their rule)', DATASET.filter((c) => c.split === 'holdout' && !taxIds.has(c.id)));
report('dev (the rules were tuned on these)', DATASET.filter((c) => c.split === 'dev'));
report('all', DATASET);
