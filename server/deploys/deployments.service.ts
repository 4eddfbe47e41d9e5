// Deploys as code: export a tenant as a project, plan a project against it, and deploy one. A
// deployment is the draft of every resource it changes: with a gate, the named eval suites run on the
// draft intent definitions first; the publish step then applies the whole plan in one transaction,
// and only if every suite passed and the server still matches what was planned.
//
// Bounds: each tenant deploys one at a time (a lock in PostgreSQL, held by the transaction that
// plans and applies, so a process that dies mid-publish leaves nothing held and nothing applied);
// each process works on a few plans and deployments at once (deps.deployGate, taken before the
// request body is read); a plan that changes nothing stores nothing; old deployments are deleted.
import { createHash } from 'node:crypto';
import type { EntityManager } from '../../db/orm.js';
import type { Actor } from '../actor.js';
import { pageOfRows, pageRequestOf, type HistoryList, type HistoryPageQuery, type HistoryPagination } from '../common/pagination.js';
import { isoRequired, isUuid } from '../common/schemas.js';
import type { AppDeps } from '../deps.js';
import { AppError, invalidInput, notFound, type ValidationIssue } from '../errors.js';
import { getRun, startGateRuns, type GateRunSpec } from '../evals/eval-runs.service.js';
import { findPromptVersion } from '../prompts/prompt-records.js';
import { selectCollectionRows } from '../collections/collection-records.js';
import { isBuiltInDomain } from '../domains/built-in-domains.js';
import { chooseModel } from '../llm/providers.js';
import { authenticateApiKey, type ApiKeyScope } from '../keys/authenticate-api-key.js';
import type { TenantScope } from '../tenants/tenant-scope.js';
import { applyPlan } from './apply-project.js';
import { assertMayDeploy, getDeployPolicy } from './deploy-policy.js';
import type { DeploymentDto, DeploymentSummaryDto, GateResult, Plan } from './deploys.schemas.js';
import { exportProject } from './export-project.js';
import { planProject, type ProjectPlan } from './plan-project.js';
import type { Project } from './project.schemas.js';
import { countTenantDeployments, deleteOldDeployments, findTenantDeployment, insertDeployment, listTenantDeployments, tryLockTenantDeploys, updateDeployment, type DeploymentRow } from './store/deployments.js';

/** Deployments kept per tenant (the newest), and the most days one is kept. */
export const DEPLOYMENTS_KEPT = 100;
export const DEPLOYMENT_RETENTION_DAYS = 90;

/**
 * Admission of a plan, deployment or publish, before its body is read: the key must be valid, and
 * the tenant and the process have room (deps.deployGate: 429 RATE_LIMITED or CONCURRENCY_LIMIT).
 */
export async function admitProjectRequest(deps: AppDeps, headers: Record<string, string | string[] | undefined>): Promise<() => void> {
  const key = await authenticateApiKey(deps, headers);
  return deps.deployGate.enter(key.tenantId);
}

export async function exportTenantProject(em: EntityManager, tenantId: string): Promise<{ project: Project }> {
  return { project: (await exportProject(em, tenantId)).project };
}

export async function planTenantProject(em: EntityManager, deps: AppDeps, tenantId: string, project: Project, prune: boolean): Promise<{ plan: Plan }> {
  return { plan: (await planProject(em, deps, tenantId, project, prune)).plan };
}

/** The project a publish must bring again (secret values are never stored), recognised by this digest. */
const digestOf = (project: Project) => createHash('sha256').update(JSON.stringify(project)).digest('hex');

/** Whether a deployment has anything to do: a change, or a secret value to write. */
const hasWork = (plan: Plan) => plan.changes.length > 0 || plan.secrets.length > 0;

const inProgress = () =>
  new AppError('DEPLOYMENT_IN_PROGRESS', 'Another deployment of this tenant is being planned or published; try again when it ends', { retryable: true, retry_after_seconds: 5 }, { 'Retry-After': '5' });

/** `work` in one transaction holding the tenant's deploy lock; 409 DEPLOYMENT_IN_PROGRESS when another holds it. */
function withTenantDeployLock<T>(em: EntityManager, tenantId: string, work: (tx: EntityManager) => Promise<T>): Promise<T> {
  return em.transactional(async (tx) => {
    if (!(await tryLockTenantDeploys(tx, tenantId))) throw inProgress();
    return work(tx);
  });
}

export async function createDeployment(
  em: EntityManager,
  deps: AppDeps,
  key: ApiKeyScope,
  scope: TenantScope,
  actor: Actor,
  input: { project: Project; prune?: boolean; gate?: string[]; min_pass_rate?: number; gate_models?: 'primary' | 'chain'; plan_digest?: string },
): Promise<{ deployment: DeploymentDto }> {
  const prune = input.prune ?? false;
  const policy = await getDeployPolicy(em, scope.tenantId);
  assertMayDeploy(policy, key, prune);
  // The policy's floor: a request may ask for a stricter gate, never a weaker one.
  const minPassRate = Math.max(input.min_pass_rate ?? 1, policy.min_pass_rate ?? 0);
  const gates = [...new Set([...policy.required_gates, ...(input.gate ?? [])])];
  return withTenantDeployLock(em, scope.tenantId, async (tx) => {
    const planned = await planProject(tx, deps, scope.tenantId, input.project, prune);
    if (input.plan_digest !== undefined && input.plan_digest !== planned.plan.digest) {
      throw new AppError('DEPLOYMENT_STALE', 'The server changed since the plan that was reviewed: plan and apply again', { plan: planned.plan });
    }
    if (planned.secrets.missing.length) throw invalidInput('Secrets of the project have no value', planned.secrets.missing);
    const base = {
      tenantId: scope.tenantId,
      plan: planned.plan as unknown as Record<string, unknown>,
      prune,
      minPassRate,
      baseDigest: digestOf(input.project),
      gate: [] as { suite: string; run_id: string; model?: string | null }[],
      minted: [] as { workflow_key: string; webhook_url: string }[],
      createdBy: actor.name,
      publishedAt: null as Date | null,
    };
    // Nothing to do: answered, not stored.
    if (!hasWork(planned.plan)) return { deployment: await toDto(tx, deps, scope.tenantId, unsavedDeployment({ ...base, status: 'unchanged' })) };

    // A gate judges definitions; secret values alone change none, so they are written without one.
    if (gates.length && planned.plan.changes.length) {
      const suites = await gateRunSpecs(tx, scope, planned, gates, policy.required_gates);
      const specs = input.gate_models === 'chain' ? suites.flatMap((spec, i) => eachModelOf(deps, scope, planned, spec).map((s) => ({ ...s, suite: gates[i] }))) : suites.map((spec, i) => ({ ...spec, suite: gates[i] }));
      const runs = await startGateRuns(tx, deps, scope, specs);
      const gate = runs.map((run, i) => ({ suite: specs[i].suite, run_id: run.id, model: specs[i].modelOverride }));
      return { deployment: await toDto(tx, deps, scope.tenantId, await insertDeployment(tx, { ...base, status: 'gating', gate })) };
    }
    const { minted } = await applyPlan(tx, deps, scope, actor, planned);
    return { deployment: await toDto(tx, deps, scope.tenantId, await insertDeployment(tx, { ...base, status: 'deployed', minted, publishedAt: new Date() })) };
  });
}

/** A deployment that is answered but not stored (it changes nothing). */
function unsavedDeployment(values: Omit<DeploymentRow, 'id' | 'tenant' | 'createdAt' | 'error'> & { tenantId: string }): DeploymentRow {
  const { tenantId: _t, ...rest } = values;
  return { ...rest, id: null, error: null, createdAt: new Date() } as unknown as DeploymentRow;
}

async function findDeployment(em: EntityManager, tenantId: string, id: string): Promise<DeploymentRow> {
  const row = isUuid(id) ? await findTenantDeployment(em, tenantId, id) : null;
  if (!row) throw notFound('Deployment');
  return row;
}

export async function getDeployment(em: EntityManager, deps: AppDeps, tenantId: string, id: string): Promise<{ deployment: DeploymentDto }> {
  return { deployment: await toDto(em, deps, tenantId, await findDeployment(em, tenantId, id)) };
}

const DEPLOYMENTS_LIST: HistoryList = { name: 'deployments', key: 'time' };

export async function listDeployments(em: EntityManager, tenantId: string, query: HistoryPageQuery): Promise<{ deployments: DeploymentSummaryDto[]; pagination: HistoryPagination }> {
  const request = pageRequestOf(DEPLOYMENTS_LIST, query);
  const rows = await listTenantDeployments(em, tenantId, request);
  const page = await pageOfRows(DEPLOYMENTS_LIST, request, rows, (r) => ({ key: r.cursorKey, id: r.row.id }), (cap) => countTenantDeployments(em, tenantId, cap));
  return {
    deployments: page.items.map(({ row }) => {
      const plan = row.plan as unknown as Plan;
      return {
        id: row.id,
        status: row.status as DeploymentSummaryDto['status'],
        summary: plan.summary,
        // Plans stored before plans listed secrets have none.
        secrets: plan.secrets?.length ?? 0,
        prune: row.prune,
        gate: row.gate,
        error: row.error ?? null,
        created_by: row.createdBy ?? null,
        created_at: isoRequired(row.createdAt),
        published_at: row.publishedAt ? isoRequired(row.publishedAt) : null,
      };
    }),
    pagination: page.pagination,
  };
}

/** Deletes deployments past retention (the hourly maintenance job); returns how many went. */
export function pruneDeployments(em: EntityManager, now = new Date()): Promise<number> {
  return deleteOldDeployments(em, DEPLOYMENTS_KEPT, new Date(now.getTime() - DEPLOYMENT_RETENTION_DAYS * 24 * 3600 * 1000));
}

type PublishOutcome = { deployment: DeploymentDto } | { refused: AppError; end?: { status: string; error: { code: string; message: string } } };

/**
 * Publishes a gated deployment: 409 GATE_PENDING while a suite runs, GATE_FAILED when one missed its
 * thresholds (the deployment ends, nothing changed), DEPLOYMENT_STALE when the server no longer
 * matches the plan (something else changed it since). Publishing a deployed deployment again answers it.
 */
export async function publishDeployment(em: EntityManager, deps: AppDeps, key: ApiKeyScope, scope: TenantScope, actor: Actor, id: string, project: Project): Promise<{ deployment: DeploymentDto }> {
  const first = await findDeployment(em, scope.tenantId, id);
  if (first.status === 'deployed' || first.status === 'unchanged') return { deployment: await toDto(em, deps, scope.tenantId, first) };
  assertMayDeploy(await getDeployPolicy(em, scope.tenantId), key, first.prune);
  let outcome: PublishOutcome;
  try {
    outcome = await withTenantDeployLock(em, scope.tenantId, async (tx): Promise<PublishOutcome> => {
      // Read again under the lock: another publish may have ended it meanwhile.
      const row = await findDeployment(tx, scope.tenantId, id);
      if (row.status === 'deployed' || row.status === 'unchanged') return { deployment: await toDto(tx, deps, scope.tenantId, row) };
      // `publishing`: a publish of an earlier release cut off; holding the lock, this one continues it.
      if (row.status !== 'gating' && row.status !== 'publishing') return { refused: new AppError('CONFLICT', `The deployment has ended (${row.status}); start a new one`, { status: row.status }) };
      if (digestOf(project) !== row.baseDigest) {
        return { refused: invalidInput('The project differs from the one this deployment planned', [{ path: 'project', message: 'send the same project as when the deployment was created' }]) };
      }
      const gate = await gateResults(tx, deps, scope.tenantId, row);
      if (gate.some((g) => g.passed === null)) return { refused: new AppError('GATE_PENDING', 'The gate suites are still running', { gate }) };
      if (gate.some((g) => !g.passed)) {
        const message = `Gate failed: ${gate.filter((g) => !g.passed).map((g) => (g.model ? `${g.suite} (${g.model})` : g.suite)).join(', ')}`;
        return { refused: new AppError('GATE_FAILED', `${message}; nothing was deployed`, { gate }), end: { status: 'gate_failed', error: { code: 'GATE_FAILED', message } } };
      }
      const planned = await planProject(tx, deps, scope.tenantId, project, row.prune);
      if (planned.plan.digest !== (row.plan as unknown as Plan).digest) {
        const message = 'The server changed since the plan: plan and apply again';
        return { refused: new AppError('DEPLOYMENT_STALE', message, { plan: planned.plan }), end: { status: 'failed', error: { code: 'DEPLOYMENT_STALE', message } } };
      }
      const { minted } = await applyPlan(tx, deps, scope, actor, planned);
      await updateDeployment(tx, row, { status: 'deployed', error: null, minted, publishedAt: new Date() });
      return { deployment: await toDto(tx, deps, scope.tenantId, row) };
    });
  } catch (err) {
    // A refused change rolled everything back: the deployment ends (anything else, the database
    // say, leaves it gating, to publish again).
    if (err instanceof AppError && err.code !== 'DEPLOYMENT_IN_PROGRESS') await endDeployment(em, scope.tenantId, id, 'failed', { code: err.code, message: err.message });
    throw err;
  }
  if ('deployment' in outcome) return outcome;
  if (outcome.end) await endDeployment(em, scope.tenantId, id, outcome.end.status, outcome.end.error);
  throw outcome.refused;
}

async function endDeployment(em: EntityManager, tenantId: string, id: string, status: string, error: { code: string; message: string }) {
  const fresh = em.fork();
  const row = await findTenantDeployment(fresh, tenantId, id);
  if (!row || (row.status !== 'gating' && row.status !== 'publishing')) return;
  await updateDeployment(fresh, row, { status, error });
}

/**
 * Each gate suite's run. A suite the server has runs as it is live, whatever the project makes of
 * it: its rubric and scorer, its cases plus any the project adds, and the stricter of the two pass
 * thresholds, so a deployment cannot weaken its own gate. A suite only the project has runs as the
 * project defines it. A suite the policy requires must exist somewhere.
 */
async function gateRunSpecs(em: EntityManager, scope: TenantScope, planned: ProjectPlan, names: string[], required: string[]): Promise<GateRunSpec[]> {
  const issues: ValidationIssue[] = [];
  const specs: GateRunSpec[] = [];
  const find = <T extends { key: string }>(list: T[], key: string) => list.find((r) => r.key === key);
  for (const [i, name] of names.entries()) {
    const live = find(planned.current.eval_suites, name);
    const proposed = find(planned.desired.eval_suites, name);
    const suite = live ?? proposed;
    const where = required.includes(name) ? `the deploy policy's required gate "${name}"` : `gate.${i}`;
    if (!suite) {
      issues.push({ path: required.includes(name) ? 'deploy_policy.required_gates' : `gate.${i}`, message: `no eval suite "${name}" in the project or on the server (${where})` });
      continue;
    }
    const liveCases = find(planned.current.eval_datasets, suite.dataset)?.cases ?? [];
    const proposedCases = find(planned.desired.eval_datasets, proposed?.dataset ?? suite.dataset)?.cases ?? [];
    const seen = new Set(liveCases.map((c) => JSON.stringify(c)));
    const cases = [...liveCases, ...(live ? proposedCases.filter((c) => !seen.has(JSON.stringify(c))) : proposedCases)];
    if (!cases.length) {
      issues.push({ path: `gate.${i}`, message: `the dataset "${suite.dataset}" of suite "${name}" has no cases` });
      continue;
    }
    specs.push({
      name: `gate: ${name}`,
      domainKey: suite.domain,
      intentKey: suite.intent,
      judgeRubric: suite.judge_rubric,
      passThreshold: Math.max(live?.pass_threshold ?? 0, proposed?.pass_threshold ?? 0),
      customScorerExpression: suite.custom_scorer_expression,
      cases: cases.map((c, ord) => ({ ord, input: c.input, message: c.message, expected_output: c.expected_output })),
      intentDefinition: isBuiltInDomain(suite.domain) ? null : await draftOf(em, scope.tenantId, planned, suite.domain, suite.intent),
      modelOverride: null,
      judgeFallbackModels: suite.fallback_models ?? null,
    });
  }
  if (issues.length) throw invalidInput('The gate names suites that cannot run', issues);
  return specs;
}

/**
 * A gate suite once per model of its intent's chain, each model alone: the intent's model (else the
 * tenant's default, else the platform's), then its fallbacks (the intent's, else the tenant's, else
 * the platform's), as the deployment would make them live.
 */
function eachModelOf(deps: AppDeps, scope: TenantScope, planned: ProjectPlan, spec: GateRunSpec): GateRunSpec[] {
  const live = planned.current.intents.find((i) => i.domain === spec.domainKey && i.key === spec.intentKey);
  const exec: { model?: string | null; fallback_models?: string[] | null } = (spec.intentDefinition?.execution_config ?? live?.execution_config ?? {}) as object;
  const primary = chooseModel(exec.model, scope.tenant.defaultModel, deps.config.DEFAULT_MODEL);
  const fallbacks = exec.fallback_models ?? scope.tenant.modelFallbacks ?? deps.config.LLM_FALLBACK_MODELS ?? [];
  const models = [...new Set([primary, ...fallbacks])];
  return models.map((model) => ({ ...spec, name: `${spec.name} (${model})`, modelOverride: model }));
}

/** The intent as the deployment would make it live (null when the project does not define it: the live one runs). */
async function draftOf(em: EntityManager, tenantId: string, planned: ProjectPlan, domain: string, key: string): Promise<Record<string, unknown> | null> {
  const intent = planned.desired.intents.find((i) => i.domain === domain && i.key === key);
  if (!intent) return null;
  let template = intent.prompt_template;
  if (intent.prompt_binding) {
    const { prompt_key, version } = intent.prompt_binding;
    const fromProject = planned.desired.prompts.find((p) => p.key === prompt_key)?.versions[version - 1]?.template;
    template = fromProject ?? (await findPromptVersion(em, tenantId, prompt_key, version))?.template ?? template;
  }
  let retrieval: Record<string, unknown> | null = null;
  if (intent.retrieval_config) {
    const { collections, ...rest } = intent.retrieval_config;
    const ids = new Map((await selectCollectionRows(em, tenantId)).map((c) => [c.slug, c.id]));
    retrieval = { ...rest, ...(collections ? { collection_ids: collections.map((slug) => ids.get(slug)).filter((id): id is string => !!id) } : {}) };
  }
  return {
    display_name: intent.display_name,
    description: intent.description,
    prompt_template: template,
    input_schema: intent.input_schema,
    output_schema: intent.output_schema,
    execution_config: intent.execution_config,
    guardrails_config: intent.guardrails_config,
    retrieval_config: retrieval,
  };
}

async function gateResults(em: EntityManager, deps: AppDeps, tenantId: string, row: DeploymentRow): Promise<GateResult[]> {
  const results: GateResult[] = [];
  for (const { suite, run_id, model } of row.gate) {
    const { run } = await getRun(em, deps, tenantId, run_id);
    const ended = run.status === 'completed' || run.status === 'failed' || run.status === 'cancelled';
    const passRate = run.cases_total ? run.cases_passed / run.cases_total : null;
    results.push({
      suite,
      run_id,
      model: model ?? null,
      status: run.status,
      progress: run.progress,
      cases_total: run.cases_total,
      cases_passed: run.cases_passed,
      cases_errored: run.cases_errored,
      pass_rate: passRate,
      mean_score: run.mean_score,
      passed: ended ? run.status === 'completed' && run.cases_errored === 0 && passRate !== null && passRate >= Number(row.minPassRate) : null,
    });
  }
  return results;
}

async function toDto(em: EntityManager, deps: AppDeps, tenantId: string, row: DeploymentRow): Promise<DeploymentDto> {
  const gate = await gateResults(em, deps, tenantId, row);
  const ended = gate.filter((g) => g.passed !== null).length;
  const gating = row.status === 'gating' || row.status === 'publishing';
  return {
    id: row.id ?? null,
    status: row.status as DeploymentDto['status'],
    progress: gating ? Math.floor(gate.reduce((sum, g) => sum + g.progress, 0) / Math.max(gate.length, 1)) : 100,
    stage: gating ? (ended === gate.length ? 'gate ended: publish' : `gate: ${ended}/${gate.length} suites ended`) : null,
    prune: row.prune,
    min_pass_rate: Number(row.minPassRate),
    // Plans stored before plans listed secrets have none.
    plan: { ...(row.plan as unknown as Plan), secrets: (row.plan as unknown as Plan).secrets ?? [] },
    gate,
    error: row.error ?? null,
    minted: row.minted,
    created_by: row.createdBy ?? null,
    created_at: isoRequired(row.createdAt),
    published_at: row.publishedAt ? isoRequired(row.publishedAt) : null,
  };
}
