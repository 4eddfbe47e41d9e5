// Time of the pre_llm guardrail scan (injection rules, PII detection and redaction) at 10 KB,
// 100 KB and 1 MB: realistic text (the labelled dataset's cases joined until the size is reached)
// and adversarial repetitions built to trip super-linear patterns, plus realistic text checked
// against 500 blocked terms (the most a tenant may configure). Results go to
// test/bench/results/guardrails-speed.json.
// Run: node bin/run-ts.mjs test/bench/guardrails-speed.ts [--runs 5] [--sizes 10000,100000,1000000]
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { runPreLlm } from '../../server/guardrails/run-pre-llm.js';
import { ADVERSARIAL_UNITS, realisticText, repeatTo } from '../guardrails/large-text.js';

const arg = (name: string) => {
  const at = process.argv.indexOf(`--${name}`);
  return at >= 0 ? process.argv[at + 1] : undefined;
};
const RUNS = Number(arg('runs') ?? 5);
const SIZES = (arg('sizes') ?? '10000,100000,1000000').split(',').map(Number);
const config = { max_input_chars: 1_000_000 };
type Config = typeof config & { blocked_terms?: string[] };
const withTerms: Config = { ...config, blocked_terms: Array.from({ length: 500 }, (_, i) => `competitor ${i} inc`) };

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}

/** Median wall-clock and CPU time (this thread's user + system) of one scan, in ms. */
function timeScan(text: string, scanConfig: Config): { wall: number; cpu: number } {
  runPreLlm(text.slice(0, 10_000), scanConfig); // warm-up
  const wall: number[] = [];
  const cpu: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    const cpuBefore = process.cpuUsage();
    const started = performance.now();
    runPreLlm(text, scanConfig);
    wall.push(performance.now() - started);
    const used = process.cpuUsage(cpuBefore);
    cpu.push((used.user + used.system) / 1000);
  }
  return { wall: median(wall), cpu: median(cpu) };
}

const inputs: [string, (size: number) => string, Config][] = [
  ['realistic (dataset texts)', realisticText, config],
  ['realistic, 500 blocked terms', realisticText, withTerms],
  ...Object.entries(ADVERSARIAL_UNITS).map(([name, unit]): [string, (size: number) => string, Config] => [name, (size) => repeatTo(unit, size), config]),
];

/** A bare loop over the characters of 1 MB: how fast this machine is, to read the figures against. */
function calibrate(): number {
  const text = realisticText(1_000_000);
  let best = Infinity;
  for (let run = 0; run < 5; run++) {
    const started = performance.now();
    let words = 0;
    for (let i = 0; i < text.length; i++) if (text.charCodeAt(i) === 32) words++;
    best = Math.min(best, performance.now() - started);
    if (words < 0) console.log(words);
  }
  return best;
}

const label = (size: number) => (size >= 1_000_000 ? `${size / 1_000_000} MB` : `${size / 1000} KB`);
const round = (ms: number) => Math.round(ms * 10) / 10;
// Wall-clock time is what a request waits; CPU time is what the scan costs (on a machine shared
// with other work, wall-clock time also counts the time the thread was not running).
const loopMs = calibrate();
console.log(`pre_llm scan, median of ${RUNS} runs: wall-clock ms (CPU ms); ${cpus().length} CPUs, load average ${loadavg()[0]!.toFixed(2)}; a bare loop over 1 MB: ${loopMs.toFixed(1)} ms\n`);
console.log(`| input | ${SIZES.map(label).join(' | ')} |`);
console.log(`|---|${SIZES.map(() => '---:').join('|')}|`);
const rows: { input: string; wallMs: Record<string, number>; cpuMs: Record<string, number> }[] = [];
for (const [name, make, scanConfig] of inputs) {
  const times = SIZES.map((size) => timeScan(make(size), scanConfig));
  rows.push({
    input: name,
    wallMs: Object.fromEntries(SIZES.map((size, i) => [label(size), round(times[i]!.wall)])),
    cpuMs: Object.fromEntries(SIZES.map((size, i) => [label(size), round(times[i]!.cpu)])),
  });
  console.log(`| ${name} | ${times.map((t) => `${t.wall.toFixed(1)} (${t.cpu.toFixed(1)})`).join(' | ')} |`);
}
const largest = label(SIZES[SIZES.length - 1]!);
const slowest = rows.reduce((a, b) => (b.cpuMs[largest]! > a.cpuMs[largest]! ? b : a));
console.log(`\nslowest at ${largest}: ${slowest.input}, ${slowest.wallMs[largest]} ms wall-clock (${slowest.cpuMs[largest]} ms CPU)`);

const dir = new URL('./results/', import.meta.url);
mkdirSync(dir, { recursive: true });
writeFileSync(
  new URL('guardrails-speed.json', dir),
  `${JSON.stringify({ date: new Date().toISOString(), node: process.version, cpus: cpus().length, loadAverage: loadavg()[0], bareLoopMsPerMb: round(loopMs), runs: RUNS, unit: 'ms (median of runs)', rows }, null, 2)}\n`,
);
