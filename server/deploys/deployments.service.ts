// Deploys as code: export a tenant as a project, plan a project against it, and deploy one. A
// deployment is the draft of every resource it changes: with a gate, the named eval suites run on the
// draft intent definitions first; the publish step then applies the whole plan in one transaction,
// and only if every suite passed and the server still matches what was planned.
import { createHash } from 'node:crypto';
import type { EntityManager } from '../../db/orm.js';
import type { Actor } from '../actor.js';
import { isoRequired, isUuid } from '../common/schemas.js';
import type { AppDeps } from '../deps.js';
import { AppError, invalidInput, notFound, type ValidationIssue } from '../errors.js';
import { getRun, startGateRuns, type GateRunSpec } from '../evals/eval-runs.service.js';
import { findPromptVersion } from '../prompts/store/prompts.js';
import { selectCollectionRows } from '../collections/store/collections.js';
import { isBuiltInDomain } from '../domains/built-in-domains.js';
import type { TenantScope } from '../tenants/tenant-scope.js';
import { applyPlan } from './apply-project.js';
import type { DeploymentDto, GateResult, Plan } from './deploys.schemas.js';
import { exportProject } from './export-project.js';
import { planProject, type ProjectPlan } from './plan-project.js';
import type { Project } from './project.schemas.js';
import { claimDeploymentForPublish, findTenantDeployment, insertDeployment, saveDeployments, type DeploymentRow } from './store/deployments.js';

export async function exportTenantProject(em: EntityManager, tenantId: string): Promise<{ project: Project }> {
  return { project: (await exportProject(em, tenantId)).project };
}

export async function planTenantProject(em: EntityManager, deps: AppDeps, tenantId: string, project: Project, prune: boolean): Promise<{ plan: Plan }> {
  return { plan: (await planProject(em, deps, tenantId, project, prune)).plan };
}

/** The project a publish must bring again (secret values are never stored), recognised by this digest. */
const digestOf = (project: Project) => createHash('sha256').update(JSON.stringify(project)).digest('hex');

const hasChanges = (plan: Plan) => plan.changes.length > 0;

export async function createDeployment(
  em: EntityManager,
  deps: AppDeps,
  scope: TenantScope,
  actor: Actor,
  input: { project: Project; prune?: boolean; gate?: string[]; min_pass_rate?: number; plan_digest?: string },
): Promise<{ deployment: DeploymentDto }> {
  const prune = input.prune ?? false;
  const minPassRate = input.min_pass_rate ?? 1;
  const planned = await planProject(em, deps, scope.tenantId, input.project, prune);
  if (input.plan_digest !== undefined && input.plan_digest !== planned.plan.digest) {
    throw new AppError('DEPLOYMENT_STALE', 'The server changed since the plan that was reviewed: plan and apply again', { plan: planned.plan });
  }
  if (planned.secrets.missing.length) throw invalidInput('Secrets of the project have no value', planned.secrets.missing);
  const base = {
    tenantId: scope.tenantId,
    // What is stored is the canonical project: secrets appear only as references.
    project: planned.desired as unknown as Record<string, unknown>,
    plan: planned.plan as unknown as Record<string, unknown>,
    prune,
    minPassRate,
    baseDigest: digestOf(input.project),
    gate: [] as { suite: string; run_id: string }[],
    minted: [] as { workflow_key: string; webhook_url: string }[],
    publishedAt: null as Date | null,
  };
  if (!hasChanges(planned.plan)) return { deployment: await toDto(em, deps, scope.tenantId, await insertDeployment(em, { ...base, status: 'unchanged' })) };

  const gates = input.gate ?? [];
  if (gates.length) {
    const specs = await gateRunSpecs(em, scope, planned, gates);
    const runs = await startGateRuns(em, deps, scope, specs);
    const gate = runs.map((run, i) => ({ suite: gates[i], run_id: run.id }));
    return { deployment: await toDto(em, deps, scope.tenantId, await insertDeployment(em, { ...base, status: 'gating', gate })) };
  }
  const { minted } = await applyPlan(em, deps, scope, actor, planned);
  return { deployment: await toDto(em, deps, scope.tenantId, await insertDeployment(em, { ...base, status: 'deployed', minted, publishedAt: new Date() })) };
}

async function findDeployment(em: EntityManager, tenantId: string, id: string): Promise<DeploymentRow> {
  const row = isUuid(id) ? await findTenantDeployment(em, tenantId, id) : null;
  if (!row) throw notFound('Deployment');
  return row;
}

export async function getDeployment(em: EntityManager, deps: AppDeps, tenantId: string, id: string): Promise<{ deployment: DeploymentDto }> {
  return { deployment: await toDto(em, deps, tenantId, await findDeployment(em, tenantId, id)) };
}

/**
 * Publishes a gated deployment: 409 GATE_PENDING while a suite runs, GATE_FAILED when one missed its
 * thresholds (the deployment ends, nothing changed), DEPLOYMENT_STALE when the server no longer
 * matches the plan (something else changed it since). Publishing a deployed deployment again answers it.
 */
export async function publishDeployment(em: EntityManager, deps: AppDeps, scope: TenantScope, actor: Actor, id: string, project: Project): Promise<{ deployment: DeploymentDto }> {
  const row = await findDeployment(em, scope.tenantId, id);
  if (row.status === 'deployed' || row.status === 'unchanged') return { deployment: await toDto(em, deps, scope.tenantId, row) };
  if (row.status === 'publishing') throw new AppError('CONFLICT', 'Another request is publishing this deployment', { status: row.status, retryable: true });
  if (row.status !== 'gating') throw new AppError('CONFLICT', `The deployment has ended (${row.status}); start a new one`, { status: row.status });
  if (digestOf(project) !== row.baseDigest) {
    throw invalidInput('The project differs from the one this deployment planned', [{ path: 'project', message: 'send the same project as when the deployment was created' }]);
  }
  const gate = await gateResults(em, deps, scope.tenantId, row);
  if (gate.some((g) => g.passed === null)) throw new AppError('GATE_PENDING', 'The gate suites are still running', { gate });
  if (gate.some((g) => !g.passed)) {
    row.status = 'gate_failed';
    row.error = { code: 'GATE_FAILED', message: `Gate failed: ${gate.filter((g) => !g.passed).map((g) => g.suite).join(', ')}` };
    await saveDeployments(em);
    throw new AppError('GATE_FAILED', `${row.error.message}; nothing was deployed`, { gate });
  }
  if (!(await claimDeploymentForPublish(em, scope.tenantId, row.id))) throw new AppError('CONFLICT', 'Another request is publishing this deployment', { retryable: true });
  const end = async (status: string, error: { code: string; message: string } | null, minted: DeploymentRow['minted'] = []) => {
    const fresh = em.fork();
    const current = await findDeployment(fresh, scope.tenantId, row.id);
    Object.assign(current, { status, error, minted, publishedAt: status === 'deployed' ? new Date() : null });
    await saveDeployments(fresh);
    return current;
  };
  try {
    const planned = await planProject(em, deps, scope.tenantId, project, row.prune);
    if (planned.plan.digest !== (row.plan as unknown as Plan).digest) {
      await end('failed', { code: 'DEPLOYMENT_STALE', message: 'The server changed since the plan: plan and apply again' });
      throw new AppError('DEPLOYMENT_STALE', 'The server changed since the plan: plan and apply again', { plan: planned.plan });
    }
    const { minted } = await applyPlan(em, deps, scope, actor, planned);
    return { deployment: await toDto(em, deps, scope.tenantId, await end('deployed', null, minted)) };
  } catch (err) {
    const current = await findTenantDeployment(em.fork(), scope.tenantId, row.id);
    if (current?.status === 'publishing') {
      // A refused change ends the deployment; anything else (the database) leaves it to publish again.
      if (err instanceof AppError) await end('failed', { code: err.code, message: err.message });
      else await end('gating', null);
    }
    throw err;
  }
}

/** Each gate suite's run: the suite and its dataset as the project has them (else as the server has them). */
async function gateRunSpecs(em: EntityManager, scope: TenantScope, planned: ProjectPlan, names: string[]): Promise<GateRunSpec[]> {
  const issues: ValidationIssue[] = [];
  const specs: GateRunSpec[] = [];
  const find = <T extends { key: string }>(list: T[], key: string) => list.find((r) => r.key === key);
  for (const [i, name] of names.entries()) {
    const suite = find(planned.desired.eval_suites, name) ?? find(planned.current.eval_suites, name);
    if (!suite) {
      issues.push({ path: `gate.${i}`, message: `no eval suite "${name}" in the project or on the server` });
      continue;
    }
    const dataset = find(planned.desired.eval_datasets, suite.dataset) ?? find(planned.current.eval_datasets, suite.dataset);
    if (!dataset?.cases.length) {
      issues.push({ path: `gate.${i}`, message: `the dataset "${suite.dataset}" of suite "${name}" has no cases` });
      continue;
    }
    specs.push({
      name: `gate: ${name}`,
      domainKey: suite.domain,
      intentKey: suite.intent,
      judgeRubric: suite.judge_rubric,
      passThreshold: suite.pass_threshold,
      customScorerExpression: suite.custom_scorer_expression,
      cases: dataset.cases.map((c, ord) => ({ ord, input: c.input, message: c.message, expected_output: c.expected_output })),
      intentDefinition: isBuiltInDomain(suite.domain) ? null : await draftOf(em, scope.tenantId, planned, suite.domain, suite.intent),
    });
  }
  if (issues.length) throw invalidInput('The gate names suites that cannot run', issues);
  return specs;
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
  for (const { suite, run_id } of row.gate) {
    const { run } = await getRun(em, deps, tenantId, run_id);
    const ended = run.status === 'completed' || run.status === 'failed' || run.status === 'cancelled';
    const passRate = run.cases_total ? run.cases_passed / run.cases_total : null;
    results.push({
      suite,
      run_id,
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
    id: row.id,
    status: row.status as DeploymentDto['status'],
    progress: gating ? Math.floor(gate.reduce((sum, g) => sum + g.progress, 0) / Math.max(gate.length, 1)) : 100,
    stage: gating ? (ended === gate.length ? 'gate ended: publish' : `gate: ${ended}/${gate.length} suites ended`) : null,
    prune: row.prune,
    min_pass_rate: Number(row.minPassRate),
    plan: row.plan as unknown as Plan,
    gate,
    error: row.error ?? null,
    minted: row.minted,
    created_at: isoRequired(row.createdAt),
    published_at: row.publishedAt ? isoRequired(row.publishedAt) : null,
  };
}
