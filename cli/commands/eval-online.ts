// `liya evals online ...` and `liya evals monitors ...`: online evaluation through the API key routes
// (evals:read, evals:write). `online` sets which production runs are sampled and scored (rules), and
// reads the live windows (an eval run per rule and day: compare one with a suite run using `liya evals
// compare`) and the monthly judge cap; `monitors` lists, creates and deletes monitors and shows their history.
import { Command, InvalidArgumentError } from 'commander';
import { createElement as h } from 'react';
import { action } from '../action.js';
import { commandContext } from '../context.js';
import { dateTime, oneLine, segment } from '../format.js';
import { parseInteger } from '../options.js';
import { printJson, show, withSpinner } from '../output.js';
import type { ResponseData } from '../response-types.js';
import { Stack } from '../ui/stack.js';
import { StatusLine } from '../ui/status.js';
import { Table } from '../ui/table.js';

type Rule = ResponseData<'onlineEvals', 'getOnlineRule'>['rule'];
type Monitor = ResponseData<'onlineEvals', 'getMonitor'>['monitor'];
type Windows = ResponseData<'onlineEvals', 'listOnlineWindows'>;
type Budget = ResponseData<'onlineEvals', 'readOnlineBudget'>['budget'];
type History = ResponseData<'onlineEvals', 'monitorHistory'>;

const client = (command: Command) => commandContext(command).withApiKey();
const RULES = '/v1/evals/online';
const MONITORS = '/v1/evals/monitors';

/** A number within [min, max], checked before any request. */
const parseNumber = (min: number, max: number) => (value: string) => {
  const n = Number(value);
  if (value.trim() === '' || !Number.isFinite(n) || n < min || n > max) throw new InvalidArgumentError(`a number from ${min} to ${max}`);
  return n;
};

/** --filter key=value[,value...] (repeatable): the metadata a run must carry. */
function collectFilter(value: string, previous: Record<string, unknown> = {}): Record<string, unknown> {
  const at = value.indexOf('=');
  if (at <= 0) throw new InvalidArgumentError('key=value, or key=value1,value2 for any of several');
  const values = value.slice(at + 1).split(',');
  return { ...previous, [value.slice(0, at)]: values.length === 1 ? values[0] : values };
}

/** --target intent:<domain>/<intent> | agent:<key> | step:<workflow>/<step>. */
function parseTarget(value: string): Record<string, string> {
  const [kind, rest = ''] = [value.slice(0, value.indexOf(':')), value.slice(value.indexOf(':') + 1)];
  const [first, second] = rest.split('/');
  if (kind === 'intent' && first && second) return { kind: 'intent', domain_key: first, intent_key: second };
  if (kind === 'agent' && first && !second) return { kind: 'agent', agent_key: first };
  if (kind === 'step' && first && second) return { kind: 'workflow_step', workflow_key: first, step_id: second };
  throw new InvalidArgumentError('intent:<domain>/<intent>, agent:<key> or step:<workflow>/<step>');
}

const targetText = (t: Rule['target']) => (t.kind === 'intent' ? `intent ${t.domain_key}/${t.intent_key}` : t.kind === 'agent' ? `agent ${t.agent_key}` : `step ${t.workflow_key}/${t.step_id}`);
const ruleRows = (rules: Rule[]) =>
  rules.map((r) => [r.id, oneLine(r.name, 40), targetText(r.target), `${Math.round(r.sample_rate * 1000) / 10}%`, r.filter ? oneLine(JSON.stringify(r.filter), 40) : '—', String(r.daily_cap), r.enabled ? 'on' : 'paused']);
const fmt = (n: number | null, digits = 2) => (n === null ? '—' : n.toFixed(digits));
const monitorRows = (monitors: Monitor[]) =>
  monitors.map((m) => [
    m.id, oneLine(m.name, 40), `${m.metric}${m.dimension ? `.${m.dimension}` : ''} ${m.direction === 'below' ? '<' : '>'} ${m.threshold}`, m.state === 'firing' ? 'FIRING' : m.enabled ? 'ok' : 'paused',
    fmt(m.last_value), fmt(m.last_bound), String(m.last_samples), m.changed_at ? dateTime(m.changed_at) : '—',
  ]);

function onlineCommand(): Command {
  const online = new Command('online').description('Score sampled production runs with a suite\'s scorers: rules, live windows, the monthly judge cap');

  online
    .command('list')
    .description('The sampling rules: target, rate, filter, daily cap')
    .option('--json', 'print the rules as JSON')
    .action(action(async (flags: { json?: boolean }, command: Command) => {
      const { rules } = await client(command).get<{ rules: Rule[] }>(RULES, { auth: 'bearer' });
      if (flags.json) return printJson({ rules });
      await show(h(Table, { headers: ['Id', 'Name', 'Target', 'Rate', 'Filter', 'Cap/day', 'State'], rows: ruleRows(rules), empty: 'No rules: liya evals online create --suite <id> --rate 0.1' }));
    }));

  online
    .command('create')
    .description('Sample runs of a target (default: the suite\'s intent) and score them with the suite\'s check, judge and custom scorer')
    .requiredOption('--suite <id>', 'the suite whose scorers score the samples')
    .option('--name <name>', 'the rule\'s name (default: online <suite>)')
    .option('--target <target>', 'intent:<domain>/<intent>, agent:<key> or step:<workflow>/<step>', parseTarget)
    .option('--rate <fraction>', 'the share of matching runs scored, 0-1', parseNumber(0, 1), 0.1)
    .option('--filter <key=value>', 'metadata the run must carry (repeatable; key=a,b for any of several)', collectFilter)
    .option('--daily-cap <n>', 'samples scored per UTC day at most', parseInteger(1, 100_000), 1000)
    .option('--json', 'print the rule as JSON')
    .action(action(async (flags: { suite: string; name?: string; target?: Record<string, string>; rate: number; filter?: Record<string, unknown>; dailyCap: number; json?: boolean }, command: Command) => {
      const body = {
        name: flags.name ?? `online ${flags.suite}`, suite_id: flags.suite, sample_rate: flags.rate, daily_cap: flags.dailyCap,
        ...(flags.target ? { target: flags.target } : {}), ...(flags.filter ? { filter: flags.filter } : {}),
      };
      const { rule } = await withSpinner('Creating the rule', () => client(command).post<{ rule: Rule }>(RULES, { auth: 'bearer', body }));
      if (flags.json) return printJson({ rule });
      await show(h(StatusLine, { kind: 'success', message: `Sampling ${Math.round(rule.sample_rate * 1000) / 10}% of ${targetText(rule.target)} (${rule.id})`, hints: [`Live scores: liya evals online windows ${rule.id}`] }));
    }));

  online
    .command('set')
    .description('Change a rule: its rate, daily cap, or pause and resume it')
    .argument('<ruleId>', 'the rule (liya evals online list)')
    .option('--rate <fraction>', 'the share of matching runs scored, 0-1', parseNumber(0, 1))
    .option('--daily-cap <n>', 'samples scored per UTC day at most', parseInteger(1, 100_000))
    .option('--pause', 'stop sampling')
    .option('--resume', 'sample again')
    .option('--json', 'print the rule as JSON')
    .action(action(async (ruleId: string, flags: { rate?: number; dailyCap?: number; pause?: boolean; resume?: boolean; json?: boolean }, command: Command) => {
      const body = {
        ...(flags.rate !== undefined ? { sample_rate: flags.rate } : {}), ...(flags.dailyCap !== undefined ? { daily_cap: flags.dailyCap } : {}),
        ...(flags.pause ? { enabled: false } : {}), ...(flags.resume ? { enabled: true } : {}),
      };
      const { rule } = await client(command).patch<{ rule: Rule }>(`${RULES}/${segment(ruleId)}`, { auth: 'bearer', body });
      if (flags.json) return printJson({ rule });
      await show(h(Table, { headers: ['Id', 'Name', 'Target', 'Rate', 'Filter', 'Cap/day', 'State'], rows: ruleRows([rule]) }));
    }));

  online
    .command('windows')
    .description('Live scores: the rule\'s windows (an eval run per UTC day), newest first: samples scored and capped, pass rate, mean score, judge spend')
    .argument('<ruleId>', 'the rule (liya evals online list)')
    .option('--json', 'print the windows as JSON')
    .action(action(async (ruleId: string, flags: { json?: boolean }, command: Command) => {
      const { windows } = await client(command).get<Windows>(`${RULES}/${segment(ruleId)}/windows`, { auth: 'bearer' });
      if (flags.json) return printJson({ windows });
      const rows = windows.map((w) => [
        w.window_day ?? '—', w.id, w.status, `${w.cases_done}/${w.cases_total}`, String(w.samples_capped),
        w.cases_done ? `${Math.round((100 * w.cases_passed) / w.cases_done)}%` : '—', fmt(w.mean_score), w.judge_total_cost_usd === null ? '—' : `$${w.judge_total_cost_usd.toFixed(4)}`,
      ]);
      await show(
        h(Stack, null,
          h(Table, { headers: ['Day', 'Run', 'Status', 'Scored', 'Capped', 'Pass rate', 'Mean score', 'Judge spend'], rows, empty: 'No samples scored yet.' }),
          windows[0] ? h(StatusLine, { kind: 'info', message: 'A window is an eval run.', hints: [`Its cases: GET /v1/evals/runs/${windows[0].id}/results`, `Against a suite run: liya evals compare ${windows[0].id} --against <run>`] }) : null,
        ),
      );
    }));

  online
    .command('budget')
    .description('The monthly cap on online judging and this month\'s spend; --set changes the cap')
    .option('--set <usd>', 'the tenant\'s own cap in USD', parseNumber(0, 1_000_000))
    .option('--default', 'go back to the plan\'s default cap')
    .option('--json', 'print the budget as JSON')
    .action(action(async (flags: { set?: number; default?: boolean; json?: boolean }, command: Command) => {
      const api = client(command);
      const path = '/v1/evals/online-budget';
      const { budget } = flags.set !== undefined || flags.default
        ? await api.post<{ budget: Budget }>(path, { auth: 'bearer', body: { monthly_usd: flags.default ? null : flags.set } })
        : await api.get<{ budget: Budget }>(path, { auth: 'bearer' });
      if (flags.json) return printJson({ budget });
      await show(h(StatusLine, {
        kind: budget.spent_usd >= budget.monthly_usd ? 'error' : 'info',
        message: `Online judging: $${budget.spent_usd.toFixed(4)} of $${budget.monthly_usd} this month${budget.own_monthly_usd === null ? ' (the plan\'s default cap)' : ''}`,
        lines: [`All judging, offline and online: $${budget.plan_judge_spent_usd.toFixed(4)} of ${budget.plan_judge_budget_usd === null ? 'no limit' : `$${budget.plan_judge_budget_usd}`}; resets ${dateTime(budget.resets_at)}`],
      }));
    }));

  online
    .command('delete')
    .description('Delete a rule with its monitors and queued samples (its windows stay, as runs)')
    .argument('<ruleId>', 'the rule')
    .action(action(async (ruleId: string, _flags: unknown, command: Command) => {
      await client(command).call('DELETE', `${RULES}/${segment(ruleId)}`, { auth: 'bearer' });
      await show(h(StatusLine, { kind: 'success', message: `Deleted rule ${ruleId}` }));
    }));

  return online;
}

function monitorsCommand(): Command {
  const monitors = new Command('monitors').description('Watch a rule\'s live scores: a metric over a window against a threshold, judged on a confidence bound');

  monitors
    .command('list')
    .description('The monitors: metric and threshold, state, the last value and bound, samples, when the state last changed')
    .option('--rule <ruleId>', 'only this rule\'s')
    .option('--json', 'print the monitors as JSON')
    .action(action(async (flags: { rule?: string; json?: boolean }, command: Command) => {
      const { monitors: list } = await client(command).get<{ monitors: Monitor[] }>(MONITORS, { auth: 'bearer', query: flags.rule ? { rule_id: flags.rule } : {} });
      if (flags.json) return printJson({ monitors: list });
      await show(h(Table, { headers: ['Id', 'Name', 'Alert when', 'State', 'Value', 'Bound', 'Samples', 'Changed'], rows: monitorRows(list), empty: 'No monitors: liya evals monitors create --rule <id> --metric mean_score --threshold 3.5' }));
    }));

  monitors
    .command('create')
    .description('Watch a metric of a rule\'s scores (it fires and resolves as events, eval.monitor.fired and eval.monitor.resolved)')
    .requiredOption('--rule <ruleId>', 'the online rule whose scores it watches')
    .requiredOption('--metric <metric>', 'mean_score, pass_rate, check_failure_rate, cost_usd or latency_ms')
    .requiredOption('--threshold <n>', 'the value it alerts past', parseNumber(-1e12, 1e12))
    .option('--name <name>', 'the monitor\'s name (default: <metric> <direction> <threshold>)')
    .option('--dimension <dimension>', 'mean_score only: correctness, completeness, relevance or safety')
    .option('--direction <direction>', 'below (alerts on a drop) or above (on a rise); default by metric')
    .option('--window <minutes>', 'the window, in minutes', parseInteger(1, 10_080), 60)
    .option('--window-samples <n>', 'judge on the newest n samples of the window only', parseInteger(10, 10_000))
    .option('--min-samples <n>', 'no change with fewer samples than this', parseInteger(5, 10_000), 30)
    .option('--confidence <level>', 'the confidence of the bound, 0.5-0.9999', parseNumber(0.5, 0.9999), 0.95)
    .option('--json', 'print the monitor as JSON')
    .action(action(async (flags: { rule: string; metric: string; threshold: number; name?: string; dimension?: string; direction?: string; window: number; windowSamples?: number; minSamples: number; confidence: number; json?: boolean }, command: Command) => {
      const body = {
        name: flags.name ?? `${flags.metric} ${flags.direction ?? ''} ${flags.threshold}`.replace(/\s+/g, ' '), rule_id: flags.rule, metric: flags.metric, threshold: flags.threshold,
        window_minutes: flags.window, min_samples: flags.minSamples, confidence: flags.confidence,
        ...(flags.dimension ? { dimension: flags.dimension } : {}), ...(flags.direction ? { direction: flags.direction } : {}), ...(flags.windowSamples ? { window_samples: flags.windowSamples } : {}),
      };
      const { monitor } = await withSpinner('Creating the monitor', () => client(command).post<{ monitor: Monitor }>(MONITORS, { auth: 'bearer', body }));
      if (flags.json) return printJson({ monitor });
      await show(h(StatusLine, { kind: 'success', message: `Watching ${monitor.metric} ${monitor.direction === 'below' ? 'below' : 'above'} ${monitor.threshold} (${monitor.id})`, hints: [`Its changes: liya evals monitors history ${monitor.id}`] }));
    }));

  monitors
    .command('history')
    .description('A monitor\'s state changes, newest first, with the value and bound each was decided on')
    .argument('<monitorId>', 'the monitor (liya evals monitors list)')
    .option('--json', 'print the changes as JSON')
    .action(action(async (monitorId: string, flags: { json?: boolean }, command: Command) => {
      const api = client(command);
      const [{ monitor }, { changes }] = await Promise.all([
        api.get<{ monitor: Monitor }>(`${MONITORS}/${segment(monitorId)}`, { auth: 'bearer' }),
        api.get<History>(`${MONITORS}/${segment(monitorId)}/history`, { auth: 'bearer' }),
      ]);
      if (flags.json) return printJson({ monitor, changes });
      await show(
        h(Stack, null,
          h(Table, { headers: ['Id', 'Name', 'Alert when', 'State', 'Value', 'Bound', 'Samples', 'Changed'], rows: monitorRows([monitor]) }),
          h(Table, { headers: ['At', 'State', 'Value', 'Bound', 'Samples', 'Threshold'], rows: changes.map((c) => [dateTime(c.at), c.state === 'firing' ? 'fired' : 'resolved', fmt(c.value), fmt(c.bound), String(c.samples), String(c.threshold)]), empty: 'No changes yet.' }),
        ),
      );
    }));

  monitors
    .command('delete')
    .description('Delete a monitor with its history')
    .argument('<monitorId>', 'the monitor')
    .action(action(async (monitorId: string, _flags: unknown, command: Command) => {
      await client(command).call('DELETE', `${MONITORS}/${segment(monitorId)}`, { auth: 'bearer' });
      await show(h(StatusLine, { kind: 'success', message: `Deleted monitor ${monitorId}` }));
    }));

  return monitors;
}

/** Adds `online` and `monitors` to `liya evals`. */
export function addOnlineCommands(evals: Command): Command {
  return evals.addCommand(onlineCommand()).addCommand(monitorsCommand());
}
