// `liya approvals ...`: the approvals workflow runs wait for, through the API key routes. `decide`
// approves or rejects one; the run then goes on in the background on the server, so the command
// prints the decision and where the run stands, and points to where it can be followed.
import { Argument, Command } from 'commander';
import { createElement as h } from 'react';
import { action } from '../action.js';
import { ApiError } from '../api-client.js';
import { commandContext } from '../context.js';
import type { FieldLabels } from '../errors.js';
import { printJson, reportError, show, withSpinner } from '../output.js';
import { StatusLine } from '../ui/status.js';
import type { RequestInput, ResponseData } from '../response-types.js';
import { dateTime, oneLine, segment } from '../format.js';

// ---------------------------------------------------------------- API types

export type ApprovalDecision = RequestInput<'workflows', 'decideApproval'>['decision'];

/** The `data` of POST /v1/workflows/approvals/{approvalId}/decision: the approval, and the run right after the decision (it goes on in the background, usually still `running`). */
export type ApprovalDecisionResult = ResponseData<'workflows', 'decideApproval'>;

/** The decisions <decision> accepts: a copy of the server's (a value), kept equal to it by the check below. */
export const APPROVAL_DECISIONS = ['approve', 'reject'] as const satisfies readonly ApprovalDecision[];
type MissingDecisions = Exclude<ApprovalDecision, (typeof APPROVAL_DECISIONS)[number]>;
// Fails to compile when the server takes a decision the copy lacks.
true satisfies MissingDecisions extends never ? true : never;

const decisionPath = (approvalId: string) => `/v1/workflows/approvals/${segment(approvalId)}/decision`;


// ---------------------------------------------------------------- errors

/** What to do next, by error code (on top of the general hints). */
const APPROVAL_HINTS: Record<string, string> = {
  NOT_FOUND: 'Check the approval id: a run waiting for one shows it (liya workflows runs <workflow> --status awaiting_approval).',
  APPROVAL_DECIDED: 'An approval is decided once; the run has gone on with the first decision (liya workflows runs <workflow>).',
};

/** Validation issues name what the user typed. */
const DECIDE_FIELD_LABELS: FieldLabels = { approvalId: '<approvalId>', decision: '<decision>', comment: '--comment' };

/** The error as for every command (title, issues, exit code), with hints for approvals. */
const reportApprovalError = (err: unknown) => reportError(err, DECIDE_FIELD_LABELS, (e) => APPROVAL_HINTS[e.code]);

// ---------------------------------------------------------------- decide

/** Where the run stands after the decision: it goes on by itself, so say so rather than wait for it. */
export function runAfterDecisionText(run: ApprovalDecisionResult['run']): string {
  return run.status === 'running' ? `run ${run.run_id} continues` : `run ${run.run_id} is ${run.status}`;
}

interface DecideFlags {
  comment?: string;
  json?: boolean;
}

async function decideApproval(approvalId: string, decision: ApprovalDecision, flags: DecideFlags, command: Command): Promise<number | void> {
  const client = commandContext(command).withApiKey();
  const body = { decision, ...(flags.comment !== undefined ? { comment: flags.comment } : {}) };
  let result: ApprovalDecisionResult;
  try {
    result = await withSpinner(`${decision === 'approve' ? 'Approving' : 'Rejecting'} ${approvalId}`, () =>
      client.post<ApprovalDecisionResult>(decisionPath(approvalId), { auth: 'bearer', body }),
    );
  } catch (err) {
    if (err instanceof ApiError) return reportApprovalError(err);
    throw err;
  }
  if (flags.json) return printJson(result);
  const { approval, run } = result;
  const lines = [
    `workflow ${approval.workflow_key} · step ${approval.step_id}`,
    `asked: ${oneLine(approval.message, 300)}`,
    ...(approval.comment ? [`comment: ${oneLine(approval.comment, 300)}`] : []),
    `decided${approval.decided_by ? ` by ${approval.decided_by}` : ''} at ${dateTime(approval.decided_at)}`,
  ];
  await show(
    h(StatusLine, {
      kind: approval.status === 'approved' ? 'success' : 'warning',
      message: `Approval ${approval.id} ${approval.status}: ${runAfterDecisionText(run)}`,
      lines,
      hints: [`Follow the run: liya workflows runs ${approval.workflow_key} (or GET /v1/workflows/${segment(approval.workflow_key)}/runs/${run.run_id})`],
    }),
  );
}

// ---------------------------------------------------------------- commands

export function approvalsCommand(): Command {
  const approvals = new Command('approvals').description('Decide the approvals workflow runs wait for; needs --api-key');

  approvals
    .command('decide')
    .description('Approve or reject an approval a run waits for (status awaiting_approval); the run then goes on in the background')
    .argument('<approvalId>', 'approval id (liya workflows runs <workflow> --status awaiting_approval shows it)')
    .addArgument(new Argument('<decision>', 'approve or reject').choices(APPROVAL_DECISIONS))
    .option('--comment <text>', 'a note kept with the decision')
    .option('--json', 'print {approval, run} as JSON')
    .addHelpText('after', '\nExit codes: 0 the decision was recorded; 1 the approval was decided already (APPROVAL_DECIDED), is unknown, or the request failed; 2 usage error.')
    .action(
      action((approvalId: string, decision: ApprovalDecision, flags: DecideFlags, command: Command) => decideApproval(approvalId, decision, flags, command), DECIDE_FIELD_LABELS),
    );

  return approvals;
}
