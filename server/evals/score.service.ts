// Scoring responses produced elsewhere: one response at once (`POST /v1/evals/score`, the check and
// the judge, answered directly), or a batch as an external_output run (`POST /v1/evals/runs`, 202,
// scored on the job runner like a suite's run but with no intent executed).
import { randomUUID } from 'node:crypto';
import type { EntityManager } from '../../db/orm.js';
import type { AppDeps } from '../deps.js';
import { writeUsageEvents, type UsageEventInput } from '../usage/usage.service.js';
import { checkOutput } from './check-output.js';
import { admitEvalRuns, assertEvalRunAllowed } from './eval-limits.js';
import { admittedRun, judgeModelOf } from './eval-runs.service.js';
import { insertExternalRun } from './store/eval-run-admission.js';
import type { TenantScope } from '../tenants/tenant-scope.js';
import { judgeAnswer } from './judge.js';

const DEFAULT_PASS_THRESHOLD = 4;

export interface ScoreInput {
  input?: Record<string, unknown> | null;
  response: unknown;
  expected_output?: unknown;
  rubric?: string | null;
  pass_threshold?: number;
}

/** Judges one caller-supplied response (after the check of expected_output); metered like every judge call. */
export async function scoreResponse(em: EntityManager, deps: AppDeps, scope: TenantScope, body: ScoreInput) {
  await assertEvalRunAllowed(deps.sql, scope.tenantId, scope.plan);
  const check = checkOutput(body.expected_output ?? null, body.response);
  const usage: UsageEventInput[] = [];
  try {
    const { verdict } = await judgeAnswer(em, deps, {
      tenantId: scope.tenantId, environmentId: scope.environmentId, model: judgeModelOf(deps), task: 'Answer the input as a helpful assistant would.',
      input: body.input ?? {}, message: null, expected: body.expected_output ?? null, answer: body.response, rubric: body.rubric ?? null,
      usageSink: (event) => usage.push({ ...event, countsAsRequest: false }),
    });
    const threshold = body.pass_threshold ?? DEFAULT_PASS_THRESHOLD;
    return { score: verdict.score, passed: check.passed !== false && verdict.score >= threshold, dimension_scores: verdict.dimension_scores, reasoning: verdict.reasoning, check };
  } finally {
    await em.fork().transactional((tx) => writeUsageEvents(tx, usage));
  }
}

export interface ExternalRunInput {
  name?: string | null;
  cases: { input: Record<string, unknown>; response: unknown; expected_output?: unknown }[];
  rubric?: string | null;
  pass_threshold?: number;
}

/** An external_output run: 202 with the pending run; its supplied responses are checked and judged. */
export async function startExternalRun(em: EntityManager, deps: AppDeps, scope: TenantScope, body: ExternalRunInput) {
  const id = randomUUID();
  const cases = body.cases.map((c, ord) => ({ ord, input: c.input, response: c.response ?? null, expected_output: c.expected_output ?? null }));
  const row = await admitEvalRuns(deps.sql, scope.tenantId, scope.plan, 1, (tx) =>
    insertExternalRun(tx, {
      id, tenantId: scope.tenantId, cases, name: body.name ?? null, triggeredBy: 'api', environmentId: scope.environmentId, judgeRubric: body.rubric ?? null,
      passThreshold: body.pass_threshold ?? DEFAULT_PASS_THRESHOLD, judgeModel: judgeModelOf(deps),
    }),
  );
  deps.log.debug({ run: id, cases: row.admitted_cases }, 'external evaluation run queued');
  return admittedRun(em, scope.tenantId, row);
}
