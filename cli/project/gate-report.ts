// The evaluation gate of a deployment as people and CI systems read it: a table row per suite, and
// JUnit XML with one <testsuite> per gate suite (its cases as test cases, from the eval JUnit
// report), or, for a run that could not be read, one test case for the suite. Pure: data in, text out.
// Suite names are free text: escaped wherever they are printed on a terminal.
import type { GateResult } from '../../server/deploys/deploys.schemas.js';
import { buildJUnitReport, escapeXmlAttr, escapeXmlText, type JUnitReportInput } from '../evals-junit.js';
import { formatPercent, formatScore } from '../evals-report.js';
import { escapeControls, shownName } from './shown-text.js';

export const GATE_HEADERS = ['SUITE', 'RUN', 'STATUS', 'CASES PASSED', 'ERRORED', 'PASS RATE', 'MEAN', 'PASSED'];
export const GATE_ALIGN: ('left' | 'right')[] = ['left', 'left', 'left', 'right', 'right', 'right', 'right', 'left'];

/** A gate suite's name, with the model its run called when the gate runs each model of a chain. */
export const gateName = (g: Pick<GateResult, 'suite' | 'model'>) => (g.model ? `${g.suite} (${g.model})` : g.suite);

export const gateVerdict = (g: Pick<GateResult, 'passed'>) => (g.passed === true ? 'yes' : g.passed === false ? 'no' : '—');

export function gateRows(gate: GateResult[]): string[][] {
  return gate.map((g) => [
    shownName(gateName(g)),
    escapeControls(g.run_id),
    escapeControls(g.status),
    `${g.cases_passed}/${g.cases_total}`,
    String(g.cases_errored),
    formatPercent(g.pass_rate),
    formatScore(g.mean_score),
    gateVerdict(g),
  ]);
}

/** Why a gate suite did not pass, for the outcome's lines. */
export function gateFailureLine(g: GateResult, minPassRate: number): string {
  if (g.status !== 'completed') return `${shownName(gateName(g))}: the run is ${escapeControls(g.status)}`;
  const parts = [`pass rate ${formatPercent(g.pass_rate)} (${g.cases_passed}/${g.cases_total})`];
  if (g.pass_rate !== null && g.pass_rate < minPassRate) parts.push(`below the minimum ${formatPercent(minPassRate)}`);
  if (g.cases_errored > 0) parts.push(`${g.cases_errored} errored`);
  return `${shownName(gateName(g))}: ${parts.join(', ')}`;
}

const COUNTS = ['tests', 'failures', 'errors', 'skipped'] as const;

/** A gate suite whose run could not be read: one test case with its verdict. */
function summarySuite(g: GateResult): { xml: string; counts: Record<(typeof COUNTS)[number], number> } {
  const failed = g.passed !== true;
  const errored = g.status !== 'completed';
  const message = errored ? `the run is ${g.status}` : `pass rate ${formatPercent(g.pass_rate)} (${g.cases_passed}/${g.cases_total}), ${g.cases_errored} errored`;
  const verdict = !failed ? '' : errored ? `      <error message="${escapeXmlAttr(message)}" type="RUN_${escapeXmlAttr(g.status.toUpperCase())}">${escapeXmlText(message)}</error>\n` : `      <failure message="${escapeXmlAttr(message)}" type="gate_not_passed">${escapeXmlText(message)}</failure>\n`;
  const counts = { tests: 1, failures: failed && !errored ? 1 : 0, errors: failed && errored ? 1 : 0, skipped: 0 };
  const xml =
    `  <testsuite name="${escapeXmlAttr(`${gateName(g)} (run ${g.run_id})`)}" tests="1" failures="${counts.failures}" errors="${counts.errors}" skipped="0" time="0">\n` +
    `    <testcase name="gate" classname="${escapeXmlAttr(`liya.deploy.gate.${g.suite}`)}">\n${verdict}` +
    `      <system-out>${escapeXmlText(`${message}; mean score ${formatScore(g.mean_score)}`)}</system-out>\n    </testcase>\n  </testsuite>\n`;
  return { xml, counts };
}

export interface GateSuiteReport {
  gate: GateResult;
  /** The run and its cases, when they could be read. */
  run?: JUnitReportInput;
}

/** One JUnit document for the whole gate. */
export function buildGateJUnit(suites: GateSuiteReport[]): string {
  const totals = { tests: 0, failures: 0, errors: 0, skipped: 0 };
  let time = 0;
  const parts = suites.map(({ gate, run }) => {
    if (!run) {
      const { xml, counts } = summarySuite(gate);
      COUNTS.forEach((k) => (totals[k] += counts[k]));
      return xml;
    }
    const xml = buildJUnitReport(run);
    const head = /<testsuites\b([^>]*)>/.exec(xml)?.[1] ?? '';
    const attr = (name: string) => Number(new RegExp(` ${name}="([0-9.]+)"`).exec(head)?.[1] ?? 0);
    COUNTS.forEach((k) => (totals[k] += attr(k)));
    time += attr('time');
    return xml.slice(xml.indexOf('  <testsuite '), xml.lastIndexOf('</testsuites>'));
  });
  const counts = COUNTS.map((k) => ` ${k}="${totals[k]}"`).join('');
  return `<?xml version="1.0" encoding="UTF-8"?>\n<testsuites name="liya apply gate"${counts} time="${time.toFixed(3)}">\n${parts.join('')}</testsuites>\n`;
}
