// `liya run <domain> <intent>`: runs an intent through POST /v1/run with the tenant API key, the
// input object read from a JSON file or stdin.
import { Command } from 'commander';
import { createElement as h } from 'react';
import type { IntentResponse } from '../../server/intents/intents.schemas.js';
import { action } from '../action.js';
import { ApiError } from '../api-client.js';
import { commandContext } from '../context.js';
import { describeError, type FieldLabels } from '../errors.js';
import { printJson, show, withSpinner } from '../output.js';
import { StatusLine } from '../ui/status.js';
import { readJsonObjectInput, type InputHints } from '../read-json-input.js';

/** A model call can take a while: the time limit of `run` unless --timeout / LIYA_TIMEOUT says otherwise. */
export const RUN_TIMEOUT_MS = 120_000;

/** The answer of POST /v1/run (the whole body: output, metadata, usage). */
type RunResponse = IntentResponse;

const RUN_FIELD_LABELS: FieldLabels = { input: '--input', session_id: '--session', domain: '<domain>', intent: '<intent>' };

/** What to do next, by error code (on top of the general hints). */
const RUN_HINTS: Record<string, string> = {
  DOMAIN_NOT_ENABLED: 'The tenant cannot use this domain; an administrator enables it (liya tenants update <id> --domains ...).',
  INTENT_NOT_PERMITTED: 'This API key may not run this intent.',
  NOT_FOUND: 'List the intents of a domain: liya intents list --domain <key>',
  SESSION_EXPIRED: 'Start a new session: run again without --session.',
  LLM_NOT_CONFIGURED: 'The server has no model provider configured (e.g. OPENAI_API_KEY in its environment).',
  LLM_PROVIDER_ERROR: 'The model provider failed; try again later.',
  OUTPUT_INVALID: 'The model\'s answer did not fit the intent\'s output schema; try again, or adjust the prompt.',
};

const INPUT_HINTS: InputHints = {
  unreadable: 'Give a JSON file, or - to read the JSON from stdin.',
  empty: 'It must hold a JSON object such as {"user_id": "u-1", "current_role": "Engineer"}.',
  invalidJson: [],
  notObject: 'For example {"user_id": "u-1", "current_role": "Engineer"}.',
};

/** One line about the call: model, tokens, cost, latency, cache, session. */
export function runSummary(body: RunResponse): string {
  const m = body.metadata;
  return [
    `${m.domain}/${m.intent} v${m.version}`,
    `model ${m.model_used}`,
    `${m.tokens_used} tokens`,
    `$${Number(m.cost_usd.toFixed(6))}`,
    `${m.latency_ms} ms`,
    m.cached ? 'cached' : 'not cached',
    `session ${body.data.session_id}`,
  ].join(' · ');
}

function usageLine(usage: RunResponse['usage']): string | null {
  const parts = [
    usage.requests_remaining === null ? null : `${usage.requests_remaining} requests`,
    usage.tokens_remaining === null ? null : `${usage.tokens_remaining} tokens`,
  ].filter(Boolean);
  return parts.length ? `Left this month: ${parts.join(', ')}.` : null;
}

function issueText(issue: unknown): string {
  if (typeof issue !== 'object' || issue === null) return String(issue);
  const i = issue as Record<string, unknown>;
  const head = [i.code, i.severity].filter((x) => typeof x === 'string').join(', ');
  return head ? `${head}: ${String(i.message ?? '')}` : String(i.message ?? JSON.stringify(issue));
}

/** The error as for every command, with run-specific hints and, for a guardrail block, what blocked it and the fallback text. */
async function reportRunError(err: unknown): Promise<number> {
  const report = describeError(err, RUN_FIELD_LABELS);
  let lines = report.issues;
  const hints = [...report.hints];
  if (err instanceof ApiError) {
    if (err.code === 'GUARDRAIL_BLOCKED') {
      const issues = Array.isArray(err.details?.issues) ? err.details.issues : [];
      lines = issues.map(issueText);
      const stage = err.details?.stage === 'post_llm' ? 'answer' : err.details?.stage === 'pre_llm' ? 'input' : null;
      if (stage) lines.push(`blocked: the ${stage}`);
      if (typeof err.details?.fallback === 'string') lines.push(`fallback: ${err.details.fallback}`);
    }
    const hint = RUN_HINTS[err.code];
    if (hint && !hints.includes(hint)) hints.push(hint);
  }
  await show(h(StatusLine, { kind: 'error', message: report.title, lines, hints }), process.stderr);
  return report.exitCode;
}

export function runCommand(): Command {
  return new Command('run')
    .description(
      'Run an intent (POST /v1/run) with the tenant API key (--api-key): prints the output as JSON on stdout and a line about the call ' +
        '(model, tokens, cost, latency, cache, session) on stderr',
    )
    .argument('<domain>', 'domain key, e.g. hiring')
    .argument('<intent>', 'intent key, e.g. career-path')
    .requiredOption('--input <file>', 'JSON file with the input object (must hold user_id), or - for stdin')
    .option('--session <id>', 'continue this session (from an earlier run of the same user_id)')
    .option('--json', 'print the whole response body (output, metadata, usage) as JSON')
    .addHelpText('after', `\nThe time limit is ${RUN_TIMEOUT_MS / 1000} s unless --timeout or LIYA_TIMEOUT is set.`)
    .action(
      action(async (domain: string, intent: string, flags: { input: string; session?: string; json?: boolean }, command: Command) => {
        const client = commandContext(command).withApiKey({ timeoutMs: RUN_TIMEOUT_MS });
        const input = await readJsonObjectInput(flags.input, INPUT_HINTS);
        const body = { domain, intent, input, ...(flags.session ? { session_id: flags.session } : {}) };
        let response: RunResponse;
        try {
          const res = await withSpinner(`Running ${domain}/${intent}`, () => client.send('POST', '/v1/run', { auth: 'bearer', body }));
          const envelope = (res.body ?? {}) as Partial<RunResponse> & { success?: boolean; error?: { code?: string; message?: string; details?: Record<string, unknown> } };
          if (res.status < 200 || res.status >= 300 || envelope.success !== true || !envelope.data) {
            const error = envelope.error ?? {};
            throw new ApiError(res.status, error.code ?? `HTTP_${res.status}`, error.message ?? `POST /v1/run failed with HTTP ${res.status}`, error.details);
          }
          response = envelope as RunResponse;
        } catch (err) {
          if (err instanceof ApiError) return reportRunError(err);
          throw err;
        }
        if (flags.json) return printJson(response);
        printJson(response.data.output);
        const usage = usageLine(response.usage);
        const notes = (response.metadata.guardrail_issues ?? []).map((i) => `guardrail ${issueText(i)}`);
        await show(
          h(StatusLine, {
            kind: 'info',
            message: runSummary(response),
            lines: notes,
            hints: [...(usage ? [usage] : []), `Continue this conversation: --session ${response.data.session_id}`],
          }),
          process.stderr,
        );
      }),
    );
}
