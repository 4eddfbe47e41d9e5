// A suite's custom scorer, run after the judge: a CEL expression over {input, output, expected,
// judge} giving a number or a boolean, or a webhook that gets the case as a Standard Webhooks POST
// (signed with the suite's secret, through the SSRF-safe client) and answers {score: number}.
import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import type { AppDeps } from '../deps.js';
import { postSignedWebhook, readLimited } from '../net/signed-webhook.js';
import { LimitExceededError } from '../tenants/plan-limits.js';
import type { ExpressionLimits } from '../workflows/expression-limits.js';
import { compileExpression } from '../workflows/expressions.js';
import type { JudgeVerdict } from './judge.js';

export type CustomScorer =
  /** `limits`: the tenant plan's expression_ms and expression_result_size (default: the trial plan's). */
  | { kind: 'expression'; source: string; limits?: ExpressionLimits }
  | { kind: 'webhook'; url: string; secret: string };

export interface ScorerCase {
  runId: string;
  caseId: string | null;
  input: unknown;
  output: unknown;
  expected: unknown;
  judge: JudgeVerdict | null;
}

/** A scorer that failed: the message is the case's error. */
export class ScorerError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ScorerError';
  }
}

const webhookAnswer = z.object({ score: z.number().finite() });
/** Largest scorer answer read. */
const MAX_ANSWER_BYTES = 64 * 1024;

function toScore(value: unknown): number {
  if (typeof value === 'boolean') return value ? 1 : 0;
  if (typeof value === 'number' && Number.isFinite(value)) return value;
  if (typeof value === 'bigint') return Number(value);
  throw new ScorerError(`the custom scorer expression gave ${JSON.stringify(value)?.slice(0, 100)}, not a number or a boolean`);
}

/** Runs the suite's custom scorer on one case: its score (true = 1, false = 0). Throws ScorerError. */
export async function runCustomScorer(deps: AppDeps, scorer: CustomScorer, c: ScorerCase): Promise<number> {
  if (scorer.kind === 'expression') {
    const compiled = compileExpression(scorer.source, 'eval_scorer');
    if (!compiled.ok) throw new ScorerError(`the custom scorer expression does not compile: ${compiled.error}`);
    let value: unknown;
    try {
      value = compiled.evaluate({ input: c.input ?? {}, output: c.output, expected: c.expected ?? null, judge: c.judge ?? {} }, scorer.limits);
    } catch (err) {
      if (err instanceof LimitExceededError) throw new ScorerError(`the custom scorer expression stopped at a limit (${err.code}): ${err.message}`);
      throw new ScorerError(`the custom scorer expression failed: ${(err as Error).message}`);
    }
    return toScore(value);
  }
  const body = JSON.stringify({ run_id: c.runId, case_id: c.caseId, input: c.input, output: c.output, expected_output: c.expected ?? null, judge: c.judge });
  let res: Response;
  try {
    res = await postSignedWebhook(deps.outbound, scorer.url, scorer.secret, { id: `msg_${randomUUID()}`, body, timeoutMs: deps.config.OUTBOUND_TIMEOUT_MS });
  } catch (err) {
    throw new ScorerError(`the scorer webhook could not be reached: ${(err as Error).message}`);
  }
  const { text, truncated } = await readLimited(res, MAX_ANSWER_BYTES);
  if (truncated) throw new ScorerError(`the scorer webhook answered more than ${MAX_ANSWER_BYTES} bytes`);
  if (res.status < 200 || res.status >= 300) throw new ScorerError(`the scorer webhook answered HTTP ${res.status}`);
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new ScorerError('the scorer webhook did not answer JSON');
  }
  const answer = webhookAnswer.safeParse(parsed);
  if (!answer.success) throw new ScorerError('the scorer webhook must answer {"score": <number>}');
  return answer.data.score;
}
