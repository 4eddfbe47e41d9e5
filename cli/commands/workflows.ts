// `liya workflows ...`: the tenant's workflows through the API key routes: list (deployed and
// active), show (the live steps in order with their successors, and the versions), deploy, toggle.
// The run commands (run, runs, retry, cancel) are declared here too; their work is in
// workflow-runs.ts.
import { Command } from 'commander';
import { createElement as h } from 'react';
import type { WorkflowDeployResult, WorkflowDto, WorkflowListItem, WorkflowStep, WorkflowVersion } from '../../server/workflows/workflows.schemas.js';
import { action } from '../action.js';
import { commandContext } from '../context.js';
import { printJson, show, withSpinner } from '../output.js';
import { parseInteger } from '../options.js';
import { Details } from '../ui/details.js';
import { Stack } from '../ui/stack.js';
import { StatusLine } from '../ui/status.js';
import { Table } from '../ui/table.js';
import { dateTime, oneLine, plural } from '../format.js';
import { withWorkflowErrors, workflowPath } from './workflow-errors.js';
import {
  cancelRun,
  listRuns,
  parseRunStatus,
  retryRun,
  runWorkflow,
  WORKFLOW_RUN_STATUSES,
  WORKFLOW_RUN_TIMEOUT_MS,
  WORKFLOW_STREAM_IDLE_MS,
  type RunFlags,
  type RunsFlags,
} from './workflow-runs.js';

/** The fields of a step that say where the run goes after it. */
type StepLinks = Pick<WorkflowStep, 'config' | 'on_success_step_id' | 'on_failure_step_id'> & { step_type: string };

// ---------------------------------------------------------------- show

/** A step's type, with the action it runs. */
function stepTypeText(step: WorkflowStep): string {
  return step.step_type === 'action' && step.action_id ? `action:${step.action_id}` : step.step_type;
}

/** Where the run goes after `step` (the next step by order when it names none). */
export function successorsText(step: StepLinks, nextByOrder: string | null): string {
  const next = step.on_success_step_id ?? nextByOrder;
  const onFailure = step.on_failure_step_id;
  const end = '(end)';
  const failurePart = onFailure ? [`on failure → ${onFailure}`] : [];
  switch (step.step_type) {
    case 'end':
      return end;
    case 'condition':
      return [`true → ${next ?? end}`, `false → ${onFailure ?? end}`].join(' · ');
    case 'switch': {
      const cases = Array.isArray(step.config.cases) ? (step.config.cases as { value?: unknown; next_ref?: unknown }[]) : [];
      const parts = cases.map((c) => `${JSON.stringify(c.value)} → ${String(c.next_ref)}`);
      const fallback = typeof step.config.default_ref === 'string' ? step.config.default_ref : end;
      return [...parts, `default → ${fallback}`, ...failurePart].join(' · ');
    }
    case 'loop': {
      const body = typeof step.config.step_ref === 'string' ? [`each item → ${step.config.step_ref}`] : [];
      return [...body, `then → ${next ?? end}`, ...failurePart].join(' · ');
    }
    default:
      return [`→ ${next ?? end}`, ...failurePart].join(' · ');
  }
}

/** The steps in the order they are defined, with their successors. */
function stepRows(steps: WorkflowStep[]): string[][] {
  const ordered = [...steps].sort((a, b) => a.step_order - b.step_order);
  return ordered.map((step, i) => [String(i + 1), step.id, stepTypeText(step), step.name ?? '—', successorsText(step, ordered[i + 1]?.id ?? null)]);
}

function workflowFields(w: WorkflowDto): [string, string][] {
  const state = w.is_active ? 'on' : 'off';
  return [
    ['Key', w.workflow_key],
    ['Name', w.name],
    ['Status', `${w.status} (${state})`],
    ['Version', w.version === null ? '— (never deployed)' : String(w.version)],
    ['Draft', w.has_draft ? `unpublished changes (liya workflows deploy ${w.workflow_key} publishes them)` : 'none'],
    ['Trigger', w.trigger_type],
    ['ID', w.id],
    ['Description', w.description ? oneLine(w.description, 160) : '—'],
    ['Max concurrent', w.max_concurrent_runs === null ? 'no limit' : String(w.max_concurrent_runs)],
    ['Endpoint', `POST /v1/workflows/${w.workflow_key}/run (and /run/stream)`],
    ['Created', dateTime(w.created_at)],
    ['Updated', dateTime(w.updated_at)],
  ];
}

// ---------------------------------------------------------------- commands

export function workflowsCommand(): Command {
  const workflows = new Command('workflows').description('List, inspect, deploy, switch on/off and run the tenant\'s workflows, and list, retry and cancel their runs; needs --api-key');

  workflows
    .command('list')
    .description('List the tenant\'s deployed, active workflows')
    .option('--json', 'print the workflows as a JSON array')
    .action(
      action(async (flags: { json?: boolean }, command: Command) => {
        const client = commandContext(command).withApiKey();
        return withWorkflowErrors('', 'list', async () => {
          const list = await withSpinner('Loading workflows', () => client.get<WorkflowListItem[]>('/v1/workflows', { auth: 'bearer' }));
          if (flags.json) return printJson(list);
          const first = list[0]?.workflow_key;
          await show(
            h(
              Stack,
              null,
              h(Table, {
                headers: ['KEY', 'NAME', 'VERSION', 'TRIGGER', 'STEPS'],
                rows: list.map((w) => [w.workflow_key, oneLine(w.name, 60), w.version === null ? '—' : String(w.version), w.trigger_type, String(w.steps.length)]),
                align: ['left', 'left', 'right', 'left', 'right'],
                empty: 'No active workflows.',
              }),
              h(StatusLine, {
                kind: 'info',
                message: `${plural(list.length, 'active workflow')}.`,
                hints: first
                  ? [`Run one: liya workflows run ${first} --input input.json`, `Details: liya workflows show ${first}`]
                  : ['Create one with POST /v1/workflows, then: liya workflows deploy <ref>'],
              }),
            ),
          );
        });
      }),
    );

  workflows
    .command('show')
    .description('Show one deployed workflow (active or switched off): its live steps in order with their successors, and its versions')
    .argument('<ref>', 'workflow id or workflow_key')
    .option('--json', 'print {workflow, versions} as JSON')
    .action(
      action(async (ref: string, flags: { json?: boolean }, command: Command) => {
        const client = commandContext(command).withApiKey();
        return withWorkflowErrors(ref, 'show', async () => {
          const [{ workflow }, { versions }] = await withSpinner(`Loading workflow ${ref}`, () =>
            Promise.all([
              client.get<{ workflow: WorkflowDto }>(workflowPath(ref), { auth: 'bearer' }),
              client.get<{ versions: WorkflowVersion[] }>(`${workflowPath(ref)}/versions`, { auth: 'bearer' }),
            ]),
          );
          if (flags.json) return printJson({ workflow, versions });
          await show(
            h(
              Stack,
              null,
              h(Details, { title: `Workflow ${workflow.name}`, fields: workflowFields(workflow) }),
              h(
                Stack,
                { gap: 0 },
                h(StatusLine, { kind: 'info', message: `Steps (${plural(workflow.steps.length, 'step')}, live version)` }),
                h(Table, { headers: ['#', 'STEP', 'TYPE', 'NAME', 'NEXT'], rows: stepRows(workflow.steps), align: ['right'], empty: 'No steps.' }),
              ),
              h(
                Stack,
                { gap: 0 },
                h(StatusLine, { kind: 'info', message: 'Versions' }),
                h(Table, {
                  headers: ['VERSION', 'NAME', 'STEPS', 'CREATED BY', 'CREATED'],
                  rows: versions.map((v) => [
                    v.version === workflow.version ? `${v.version} (live)` : String(v.version),
                    oneLine(v.name, 60),
                    String(v.steps_count),
                    v.created_by ?? '—',
                    dateTime(v.created_at),
                  ]),
                  align: ['left', 'left', 'right'],
                  empty: 'No versions.',
                }),
              ),
            ),
          );
        });
      }),
    );

  workflows
    .command('deploy')
    .description('Validate the workflow\'s draft and publish it as a new version (the workflow is switched on)')
    .argument('<ref>', 'workflow id or workflow_key')
    .option('--json', 'print the deployed workflow as JSON')
    .action(
      action(async (ref: string, flags: { json?: boolean }, command: Command) => {
        const client = commandContext(command).withApiKey();
        return withWorkflowErrors(ref, 'deploy', async () => {
          const deployed = await withSpinner(`Deploying workflow ${ref}`, () =>
            client.post<WorkflowDeployResult>(`${workflowPath(ref)}/deploy`, { auth: 'bearer' }),
          );
          const { workflow, ...minted } = deployed;
          // A webhook workflow's first deploy shows its URL and secrets this once: they must not be lost.
          if (flags.json) return printJson({ ...workflow, ...minted });
          const secrets = minted.webhook_secret
            ? [`Webhook URL: ${minted.webhook_url}`, `Webhook secret (shown once): ${minted.webhook_secret}`, `Callback secret (verifies run callbacks): ${minted.callback_secret}`]
            : [];
          await show(
            h(StatusLine, {
              kind: 'success',
              message: `Deployed workflow ${workflow.workflow_key} (${workflow.name}): version ${workflow.version}, status ${workflow.status}`,
              hints: [...secrets, `Run it: liya workflows run ${workflow.workflow_key} --input input.json`],
            }),
          );
        });
      }),
    );

  workflows
    .command('toggle')
    .description('Switch a deployed workflow on or off (an inactive workflow cannot run)')
    .argument('<ref>', 'workflow id or workflow_key')
    .option('--json', 'print the workflow as JSON')
    .action(
      action(async (ref: string, flags: { json?: boolean }, command: Command) => {
        const client = commandContext(command).withApiKey();
        return withWorkflowErrors(ref, 'toggle', async () => {
          const { workflow } = await withSpinner(`Switching workflow ${ref}`, () => client.patch<{ workflow: WorkflowDto }>(`${workflowPath(ref)}/toggle`, { auth: 'bearer' }));
          if (flags.json) return printJson(workflow);
          const on = workflow.is_active;
          await show(
            h(StatusLine, {
              kind: on ? 'success' : 'warning',
              message: `Workflow ${workflow.workflow_key} is now ${on ? 'on' : 'off'} (status ${workflow.status})`,
              hints: [on ? `Run it: liya workflows run ${workflow.workflow_key} --input input.json` : `It cannot run until switched on again: liya workflows toggle ${workflow.workflow_key}`],
            }),
          );
        });
      }),
    );

  workflows
    .command('run')
    .description(
      'Run a deployed, active workflow (POST /v1/workflows/{ref}/run, or /run/stream with --stream): prints each step of the trace ' +
        '(✓ completed, ✗ failed, ⏸ waiting for input) and the output as JSON on stdout, then a line about the run (status, steps, run, conversation) on stderr',
    )
    .argument('<ref>', 'workflow id or workflow_key')
    .option('--input <file>', 'JSON file with the input object (the trigger payload), or - for stdin (default {})')
    .option('--conversation <id>', 'continue the run of this conversation that waits for input (needs_input); the answer goes in the input as "message"')
    .option('--stream', 'follow the run over Server-Sent Events: each step is printed as it completes')
    .option('--json', 'print only the result {run_id, conversation_id, status, output, trace} as JSON')
    .addHelpText(
      'after',
      `
Exit codes: 0 the run completed or paused where the workflow waits (needs_input, waiting at a delay or
callback, awaiting_approval); 1 it failed, was refused or the server was unreachable; 2 usage error (unreadable or invalid
--input, missing key). --timeout limits the whole run (default ${WORKFLOW_RUN_TIMEOUT_MS / 1000} s here) or, with --stream, how long
the stream may stay silent (default ${WORKFLOW_STREAM_IDLE_MS / 1000} s). Ctrl-C stops watching; the run goes on on the server.`,
    )
    .action(action((ref: string, flags: RunFlags, command: Command) => runWorkflow(ref, flags, command)));

  workflows
    .command('runs')
    .description('List a workflow\'s runs, newest first: status, how each started, steps done, times, and whether it can be retried or cancelled')
    .argument('<workflow>', 'workflow id or workflow_key')
    .option('--status <status>', `only runs with this status: ${WORKFLOW_RUN_STATUSES.join(', ')}`, parseRunStatus)
    .option('--limit <n>', 'how many runs (1-100)', parseInteger(1, 100), 20)
    .option('--cursor <cursor>', 'continue after a previous page: its pagination.next_cursor (the "Next page" hint), with the same --status')
    .option('--json', 'print {runs, pagination} as JSON')
    .action(action((ref: string, flags: RunsFlags, command: Command) => listRuns(ref, flags, command)));

  workflows
    .command('retry')
    .description('Continue a failed run from the step that failed; prints the trace, the output and a line about the run as run does')
    .argument('<run>', 'run id (liya workflows runs <workflow> lists them)')
    .option('--json', 'print only the result {run_id, conversation_id, status, output, trace} as JSON')
    .addHelpText(
      'after',
      `
Exit codes: 0 the run completed or paused again (for input, at a delay, for an approval); 1 it failed again
(or ended rejected or cancelled), cannot be retried, or the request failed; 2 usage error (missing key).
--timeout limits the whole retry (default ${WORKFLOW_RUN_TIMEOUT_MS / 1000} s here).`,
    )
    .action(action((runId: string, flags: { json?: boolean }, command: Command) => retryRun(runId, flags, command)));

  workflows
    .command('cancel')
    .description('Cancel a run that waits (at a delay step, for example): it will not go on')
    .argument('<run>', 'run id (liya workflows runs <workflow> lists them)')
    .option('--json', 'print the cancelled run as JSON')
    .action(action((runId: string, flags: { json?: boolean }, command: Command) => cancelRun(runId, flags, command)));

  return workflows;
}
