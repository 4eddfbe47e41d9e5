// Following a deployment while its evaluation gate runs: a live ink view on a terminal (the
// deployment's bar and stage, a bar per gate suite), one line per change elsewhere (CI), and the
// polling itself through cli/poll.ts (Ctrl-C stops watching, not the runs). Suite names and the
// server's words are escaped: none can break a line or move the cursor.
import { Box, Text } from 'ink';
import { createElement as h } from 'react';
import type { DeploymentDto, GateResult } from '../../server/deploys/deploys.schemas.js';
import { FINAL_EVAL_RUN_STATUSES, formatPercent } from '../evals-report.js';
import { isInteractive } from '../output.js';
import { pollUntil } from '../poll.js';
import { progressBar } from '../ui/ingestion-progress.js';
import { renderLiveView } from '../ui/live-view.js';
import { gateName, gateVerdict } from './gate-report.js';
import { escapeControls, shownName } from './shown-text.js';

/** Every gate run has ended (or the deployment left the gating stage). */
export const gateEnded = (d: DeploymentDto) => d.status !== 'gating' || d.gate.every((g) => g.passed !== null || FINAL_EVAL_RUN_STATUSES.has(g.status));

const suiteText = (g: GateResult) =>
  `${shownName(gateName(g))}: ${escapeControls(g.status)} ${Math.round(g.progress)}% · ${g.cases_passed}/${g.cases_total} passed${g.cases_errored ? ` · ${g.cases_errored} errored` : ''}${g.passed !== null ? ` · passed ${gateVerdict(g)}` : ''}`;

/** One line about the deployment (pipes and CI get one per change). */
export function deploymentLine(d: DeploymentDto): string {
  return [`${escapeControls(d.status)}${d.stage ? ` · ${escapeControls(d.stage)}` : ''}`, `${Math.round(d.progress)}%`, ...d.gate.map(suiteText)].join(' · ');
}

const COLOR: Record<string, string> = { completed: 'green', failed: 'red', cancelled: 'yellow' };

function DeploymentProgress({ deployment: d }: { deployment: DeploymentDto }) {
  const width = Math.max(5, ...d.gate.map((g) => shownName(gateName(g)).length));
  return h(
    Box,
    { flexDirection: 'column', flexShrink: 0 },
    h(Text, null, h(Text, { bold: true }, 'Deployment'), h(Text, { dimColor: true }, ` ${escapeControls(d.id ?? '(not stored)')}`), ` · ${escapeControls(d.status)}`),
    h(Text, null, h(Text, { color: 'cyan' }, progressBar(d.progress)), ` ${`${Math.round(d.progress)}%`.padStart(4)} `, h(Text, { dimColor: true }, escapeControls(d.stage ?? ''))),
    ...d.gate.map((g) =>
      h(
        Text,
        { key: g.run_id, wrap: 'truncate-end' },
        `  ${shownName(gateName(g)).padEnd(width)} `,
        h(Text, { color: COLOR[g.status] ?? 'cyan' }, progressBar(g.progress, 16)),
        ` ${`${Math.round(g.progress)}%`.padStart(4)} ${escapeControls(g.status)} · ${g.cases_passed}/${g.cases_total} passed`,
        g.pass_rate !== null ? ` (${formatPercent(g.pass_rate)})` : '',
        g.cases_errored ? h(Text, { color: 'red' }, ` · ${g.cases_errored} errored`) : '',
      ),
    ),
  );
}

function progressView(current: () => DeploymentDto) {
  const stream = process.stdout;
  if (isInteractive(stream)) return renderLiveView(stream, () => h(DeploymentProgress, { deployment: current() }), false);
  let seen = '';
  const update = () => {
    const line = deploymentLine(current());
    if (line === seen) return;
    seen = line;
    stream.write(`${line}\n`);
  };
  return { update, finish: async () => update() };
}

/** A deployment the server stored (one that changes nothing has no id). */
export type SavedDeployment = DeploymentDto & { id: string };

export interface FollowedDeployment {
  deployment: SavedDeployment;
  stopped?: 'interrupted' | 'max-wait';
}

/**
 * Polls the deployment until `done` says so (by default: its gate has ended), Ctrl-C (a second one
 * exits at once) or `maxWaitMs`.
 */
export async function followDeployment(
  load: (id: string, signal: AbortSignal) => Promise<SavedDeployment>,
  initial: SavedDeployment,
  options: { maxWaitMs: number; done?: (d: DeploymentDto) => boolean },
): Promise<FollowedDeployment> {
  const { value, stopped } = await pollUntil(initial, load, options.done ?? gateEnded, progressView, options.maxWaitMs);
  return stopped ? { deployment: value, stopped } : { deployment: value };
}
