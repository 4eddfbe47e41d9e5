// How the `liya workflows ...` commands report an API error: the usual title, issues and exit code,
// with the flags the user typed and hints for workflows and their runs. Shared by the definition
// commands (workflows.ts) and the run commands (workflow-runs.ts).
import type { ApiError } from '../api-client.js';
import type { FieldLabels } from '../errors.js';
import { reportError, withApiErrors } from '../output.js';
import { segment } from '../format.js';

export const workflowPath = (ref: string) => `/v1/workflows/${segment(ref)}`;

/** What to do next, by error code (on top of the general hints). */
const WORKFLOW_HINTS: Record<string, string> = {
  PAYLOAD_TOO_LARGE: 'The --input is too large for the server.',
};

/** Validation issues name what the user typed. */
const RUN_FIELD_LABELS: FieldLabels = { input: '--input', conversation_id: '--conversation', workflowIdOrKey: '<ref>' };
const RUNS_FIELD_LABELS: FieldLabels = { status: '--status', pageSize: '--limit', cursor: '--cursor', workflowIdOrKey: '<workflow>' };
const RUN_ID_FIELD_LABELS: FieldLabels = { runId: '<run>' };

type Operation = 'list' | 'show' | 'deploy' | 'toggle' | 'run' | 'runs' | 'retry' | 'cancel';

const FIELD_LABELS: Partial<Record<Operation, FieldLabels>> = { run: RUN_FIELD_LABELS, runs: RUNS_FIELD_LABELS, retry: RUN_ID_FIELD_LABELS, cancel: RUN_ID_FIELD_LABELS };

/** For retry and cancel, `ref` is the run id. */
function hintFor(err: ApiError, ref: string, operation: Operation): string | undefined {
  const onRun = operation === 'retry' || operation === 'cancel';
  if (err.code === 'NOT_FOUND') {
    if (operation === 'show') return `A workflow is found once deployed (liya workflows deploy ${ref}); list the active ones: liya workflows list`;
    if (operation === 'run') return `Only deployed workflows that are switched on run; list them: liya workflows list`;
    if (onRun) return 'Check the run id; a workflow\'s runs are listed by: liya workflows runs <workflow>';
    return 'List the deployed, active workflows: liya workflows list';
  }
  // The run changed between our look at it and the request (another client acted, a delay ended).
  if (onRun && err.status === 409) return `See what the run can do now (the ACTIONS column): liya workflows runs <workflow>`;
  if (err.code === 'DEPLOY_REQUIRED') return `Deploy it first: liya workflows deploy ${ref}`;
  if (err.code === 'INVALID_INPUT' && operation === 'deploy') return `Fix the steps (PATCH /v1/workflows/${ref} with steps), then deploy again.`;
  return WORKFLOW_HINTS[err.code];
}

/** The error as for every command (title, issues, exit code), with hints for workflows. */
export const reportWorkflowError = (err: unknown, ref: string, operation: Operation) =>
  reportError(err, FIELD_LABELS[operation] ?? { workflowIdOrKey: '<ref>' }, (e) => hintFor(e, ref, operation));

/** Runs `task`; an API error is reported with the workflow hints (others go to the usual reporting). */
export const withWorkflowErrors = (ref: string, operation: Operation, task: () => Promise<number | void>) =>
  withApiErrors(task, (err) => reportWorkflowError(err, ref, operation));
