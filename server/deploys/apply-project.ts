// The publish step: every change of a plan, in one transaction, through each feature's own service
// (so every rule, audit entry and version of a hand-made change applies to a deployed one too).
// When any change is refused, the transaction rolls back and nothing of the deployment is live.
import type { EntityManager } from '../../db/orm.js';
import type { Actor } from '../actor.js';
import { createAgent, deleteAgent, deployAgent, updateAgent } from '../agents/agents.service.js';
import type { ToolsConfig } from '../agents/agents.schemas.js';
import { findAgent } from '../agents/agent-records.js';
import { MASKED_HEADER_VALUE } from '../agents/agents.schemas.js';
import { attachDomain, createCollection, deleteCollection, detachDomain, updateCollection } from '../collections/collections.service.js';
import { selectCollectionRows } from '../collections/collection-records.js';
import type { AppDeps } from '../deps.js';
import { createCustomDomain, deleteCustomDomain, updateCustomDomain } from '../domains/custom-domains.service.js';
import { isBuiltInDomain } from '../domains/built-in-domains.js';
import { AppError, invalidInput } from '../errors.js';
import { createDataset, deleteDataset, importCases, updateDataset } from '../evals/datasets.service.js';
import { deleteTenantCase, listDatasetCases, listTenantDatasets, listTenantSuites } from '../evals/eval-records.js';
import { createSuite, deleteSuite, updateSuite } from '../evals/suites.service.js';
import { createCustomIntent, deleteCustomIntent, updateCustomIntent } from '../intents/custom-intents.service.js';
import { findIntent } from '../intents/intent-records.js';
import { addPromptVersion, createPrompt, deletePrompt, updatePromptDetails } from '../prompts/prompts.service.js';
import { getTenantEntity, updateTenantFields } from '../tenants/tenant-records.js';
import type { TenantScope } from '../tenants/tenant-scope.js';
import { findWorkflowBy } from '../workflows/workflow-records.js';
import { createWorkflowWithKey, deleteWorkflow, deployWorkflow, toggleWorkflow, updateWorkflow } from '../workflows/workflows.service.js';
import type { ResourceChange } from './deploys.schemas.js';
import { mcpHeaderSlot, stepHeaderSlot, stepUrlSlot, toStepInputs, type ProjectPlan } from './plan-project.js';
import { isHttpRequestStep, MASKED_SECRET, revealStepSecrets } from '../workflows/step-secrets.js';
import type { StepDef } from '../workflows/step-types.js';
import { revealMcpHeaders } from '../agents/mcp-headers.js';
import { scorerWebhookSecret } from '../evals/suites.service.js';
import { KIND_LIST, RESOURCE_KINDS, resourceKey, type Project, type ResourceKind } from './project.schemas.js';

type Of<K extends keyof Project> = Project[K][number];

interface ApplyContext {
  tx: EntityManager;
  deps: AppDeps;
  scope: TenantScope;
  actor: Actor;
  planned: ProjectPlan;
  minted: { workflow_key: string; webhook_url: string }[];
}

/** Applies every change of `planned` in one transaction; returns the webhook URLs minted. */
export async function applyPlan(em: EntityManager, deps: AppDeps, scope: TenantScope, actor: Actor, planned: ProjectPlan) {
  if (planned.secrets.missing.length) throw invalidInput('Secrets of the project have no value', planned.secrets.missing);
  const minted: ApplyContext['minted'] = [];
  await em.transactional(async (tx) => {
    const changed = new Set(planned.plan.changes.map((c) => `${c.kind}\u0000${c.key}`));
    // A secret value given for a resource the plan leaves alone is written when it differs from the
    // stored one: an update of that resource with nothing else changed. (Decided here, not in the
    // plan, and answered the same either way: the outcome never tells whether a value was right.)
    const secretWrites: ResourceChange[] = [];
    for (const given of planned.plan.secrets) {
      const id = `${given.kind}\u0000${given.key}`;
      if (changed.has(id)) continue;
      changed.add(id);
      secretWrites.push({ kind: given.kind, key: given.key, action: 'update', fields: [] });
    }
    for (const change of [...planned.plan.changes, ...secretWrites]) {
      // Each change gets a fresh unit of work in the same transaction: a flush looks at every row its
      // unit holds, so one unit for hundreds of changes would make the publish quadratic.
      const ctx: ApplyContext = { tx: tx.fork({ keepTransactionContext: true }), deps, scope, actor, planned, minted };
      if (change.fields.length === 0 && change.action === 'update' && !(await secretsDiffer(ctx, change))) continue;
      try {
        await applyChange(ctx, change);
      } catch (err) {
        // The error names the resource, so a failed apply says which change the server refused.
        if (err instanceof AppError) {
          throw new AppError(err.code, `${change.action} ${change.kind} ${change.key}: ${err.message}`, { ...(err.details ?? {}), kind: change.kind, key: change.key, action: change.action });
        }
        throw err;
      }
    }
  });
  return { minted };
}

// Each kind's desired resources by key, built once per plan: a lookup per change would make an
// apply of thousands of resources quadratic.
const desiredIndex = new WeakMap<ProjectPlan, Map<string, unknown>>();

function desiredOf<K extends ResourceKind>(ctx: ApplyContext, kind: K, key: string) {
  let index = desiredIndex.get(ctx.planned);
  if (!index) {
    index = new Map();
    for (const k of RESOURCE_KINDS) for (const r of ctx.planned.desired[KIND_LIST[k]] as { key: string; domain?: string }[]) index.set(`${k}\u0000${resourceKey(k, r)}`, r);
    desiredIndex.set(ctx.planned, index);
  }
  return index.get(`${kind}\u0000${key}`) as Of<(typeof KIND_LIST)[K]>;
}

const changedField = (change: ResourceChange, field: string) => change.fields.some((f) => f.path === field || f.path.startsWith(`${field}.`));

async function applyChange(ctx: ApplyContext, change: ResourceChange): Promise<void> {
  const { tx, scope, actor } = ctx;
  const tenantId = scope.tenantId;
  switch (change.kind) {
    case 'domain': {
      if (change.action === 'delete') return deleteCustomDomain(tx, tenantId, actor, change.key);
      const d = desiredOf(ctx, 'domain', change.key);
      const fields = { display_name: d.display_name, description: d.description, is_active: d.is_active, sort_order: d.sort_order };
      if (change.action === 'create') await createCustomDomain(tx, tenantId, actor, { domain_key: d.key, ...fields });
      else await updateCustomDomain(tx, tenantId, actor, d.key, fields);
      return;
    }
    case 'prompt': {
      if (change.action === 'delete') return deletePrompt(tx, tenantId, actor, change.key);
      const p = desiredOf(ctx, 'prompt', change.key);
      const have = ctx.planned.current.prompts.find((c) => c.key === p.key)?.versions.length ?? 0;
      if (change.action === 'create') {
        const [first] = p.versions;
        await createPrompt(tx, tenantId, actor, { prompt_key: p.key, name: p.name, description: p.description, template: first.template, note: first.note ?? undefined });
      } else {
        await updatePromptDetails(tx, tenantId, actor, p.key, { name: p.name, description: p.description });
      }
      for (const v of p.versions.slice(Math.max(have, 1))) await addPromptVersion(tx, tenantId, actor, p.key, { template: v.template, note: v.note ?? undefined });
      return;
    }
    case 'collection':
      return applyCollection(ctx, change);
    case 'intent': {
      const [domainKey, intentKey] = change.key.split('/');
      if (change.action === 'delete') return deleteCustomIntent(tx, tenantId, actor, domainKey, intentKey);
      const i = desiredOf(ctx, 'intent', change.key);
      const { domain: _d, key: _k, retrieval_config, ...fields } = i;
      const definition = { ...fields, retrieval_config: await retrievalWithIds(ctx, retrieval_config) };
      if (change.action === 'create') await createCustomIntent(tx, tenantId, actor, { domainKey, intent_key: intentKey, ...definition });
      else await updateCustomIntent(tx, tenantId, actor, { domainKey, key: intentKey, ...definition });
      return;
    }
    case 'guardrails': {
      const g = desiredOf(ctx, 'guardrails', change.key);
      const tenant = await getTenantEntity(tx, tenantId);
      await updateTenantFields(tx, tenant, { guardrailsConfig: g.config as Record<string, unknown> | null });
      return;
    }
    case 'workflow':
      return applyWorkflow(ctx, change);
    case 'agent':
      return applyAgent(ctx, change);
    case 'eval_dataset':
      return applyDataset(ctx, change);
    case 'eval_suite':
      return applySuite(ctx, change);
  }
}

async function collectionIdBySlug(ctx: ApplyContext): Promise<Map<string, string>> {
  return new Map((await selectCollectionRows(ctx.tx, ctx.scope.tenantId)).map((c) => [c.slug, c.id]));
}

async function retrievalWithIds(ctx: ApplyContext, config: Of<'intents'>['retrieval_config']) {
  if (!config) return null;
  const { collections, ...rest } = config;
  if (!collections) return rest;
  const ids = await collectionIdBySlug(ctx);
  const missing = collections.filter((slug) => !ids.has(slug));
  if (missing.length) throw invalidInput('The intent names collections that do not exist', [{ path: 'retrieval_config.collections', message: `unknown collections: ${missing.join(', ')}` }]);
  return { ...rest, collection_ids: collections.map((slug) => ids.get(slug)!) };
}

async function applyCollection(ctx: ApplyContext, change: ResourceChange) {
  const { tx, scope, actor } = ctx;
  const tenantId = scope.tenantId;
  const caller = {};
  const idOf = async (slug: string) => (await collectionIdBySlug(ctx)).get(slug)!;
  if (change.action === 'delete') return deleteCollection(tx, tenantId, actor, await idOf(change.key));
  const c = desiredOf(ctx, 'collection', change.key);
  const defaults = {
    default_embedding_model: c.default_embedding_model,
    default_chunking_strategy: c.default_chunking_strategy,
    default_chunk_size: c.default_chunk_size,
    default_chunk_overlap: c.default_chunk_overlap,
  };
  if (change.action === 'create') {
    await createCollection(tx, tenantId, actor, { slug: c.key, label: c.label, domain_keys: c.domain_keys, color: c.color, ...defaults });
  }
  const id = await idOf(c.key);
  await updateCollection(tx, tenantId, actor, id, { label: c.label, color: c.color, tags: c.tags, visibility: c.visibility, retrieval_config: c.retrieval_config, ...defaults }, caller);
  if (change.action === 'update' && changedField(change, 'domain_keys')) {
    const before = ctx.planned.current.collections.find((x) => x.key === c.key)?.domain_keys ?? [];
    for (const key of c.domain_keys) if (!before.includes(key)) await attachDomain(tx, tenantId, actor, id, key, caller);
    for (const key of before) if (!c.domain_keys.includes(key)) await detachDomain(tx, tenantId, actor, id, key, caller);
  }
}

/**
 * The step inputs of a workflow of the project with its credentials: a value given, else the masked
 * value that keeps the stored one (server/workflows/step-secrets.ts).
 */
function stepInputsWithSecrets(ctx: ApplyContext, w: Of<'workflows'>) {
  const { stepHeaders, stepUrls } = ctx.planned.secrets;
  return toStepInputs(w.steps).map((step) => {
    if (!isHttpRequestStep({ step_type: step.step_type, action_id: step.action_id ?? null }) || !step.config) return step;
    const config = { ...step.config };
    const url = stepUrls.get(stepUrlSlot(w.key, step.id!));
    if (url !== undefined) config.url = url;
    if (config.headers && typeof config.headers === 'object') {
      config.headers = Object.fromEntries(Object.keys(config.headers).map((name) => [name, stepHeaders.get(stepHeaderSlot(w.key, step.id!, name)) ?? MASKED_SECRET]));
    }
    return { ...step, config };
  });
}

async function applyWorkflow(ctx: ApplyContext, change: ResourceChange) {
  const { tx, deps, scope, actor } = ctx;
  const tenantId = scope.tenantId;
  if (change.action === 'delete') return deleteWorkflow(tx, tenantId, actor, change.key);
  const w = desiredOf(ctx, 'workflow', change.key);
  const steps = stepInputsWithSecrets(ctx, w);
  let deploy = change.action === 'create' || changedField(change, 'steps') || (await secretsDiffer(ctx, change));
  if (change.action === 'create') {
    // A key the tenant has as a never-deployed draft is taken over by the project.
    const draft = await findWorkflowBy(tx, tenantId, { workflowKey: w.key });
    if (draft) await updateWorkflow(tx, deps, tenantId, actor, { workflowIdOrKey: w.key, name: w.name, description: w.description, max_concurrent_runs: w.max_concurrent_runs, steps });
    else await createWorkflowWithKey(tx, deps, tenantId, actor, { workflow_key: w.key, name: w.name, description: w.description, max_concurrent_runs: w.max_concurrent_runs, steps });
  } else {
    await updateWorkflow(tx, deps, tenantId, actor, {
      workflowIdOrKey: w.key, name: w.name, description: w.description, max_concurrent_runs: w.max_concurrent_runs, ...(deploy ? { steps, as_draft: true } : {}),
    });
  }
  if (deploy) {
    const deployed = await deployWorkflow(tx, deps, tenantId, actor, w.key);
    if (deployed.webhook_url) ctx.minted.push({ workflow_key: w.key, webhook_url: deployed.webhook_url });
    deploy = false;
  }
  const live = await findWorkflowBy(tx, tenantId, { workflowKey: w.key });
  if (live && live.isActive !== w.is_active) await toggleWorkflow(tx, tenantId, actor, w.key);
}

/** Whether a secret value the project gives for this resource differs from the stored one (or nothing is stored). */
async function secretsDiffer(ctx: ApplyContext, change: ResourceChange): Promise<boolean> {
  const { tx, deps, scope } = ctx;
  const tenantId = scope.tenantId;
  const given = ctx.planned.plan.secrets.filter((g) => g.kind === change.kind && g.key === change.key);
  if (!given.length || change.action !== 'update') return false;
  const { mcpHeaders, scorerSecrets, stepHeaders, stepUrls } = ctx.planned.secrets;
  switch (change.kind) {
    case 'workflow': {
      const live = ((await findWorkflowBy(tx, tenantId, { workflowKey: change.key }))?.liveSteps ?? []) as StepDef[];
      for (const stored of live.filter(isHttpRequestStep)) {
        const revealed = await revealStepSecrets(tx, deps, tenantId, stored);
        const url = stepUrls.get(stepUrlSlot(change.key, stored.id));
        if (url !== undefined && url !== revealed.config.url) return true;
        const headers = (revealed.config.headers ?? {}) as Record<string, string>;
        for (const [slot, value] of stepHeaders) {
          const [workflowKey, stepId, name] = slot.split('\u0000');
          if (workflowKey !== change.key || stepId !== stored.id) continue;
          if (Object.entries(headers).find(([n]) => n.toLowerCase() === name.toLowerCase())?.[1] !== value) return true;
        }
      }
      // A value for a step the live workflow does not have yet.
      const liveIds = new Set(live.map((s) => s.id));
      return [...stepHeaders.keys(), ...stepUrls.keys()].some((slot) => {
        const [workflowKey, stepId] = slot.split('\u0000');
        return workflowKey === change.key && !liveIds.has(stepId);
      });
    }
    case 'agent': {
      const servers = ((await findAgent(tx, tenantId, change.key))?.toolsConfig as ToolsConfig | null)?.mcp_servers ?? [];
      for (const [slot, value] of mcpHeaders) {
        const [agentKey, serverName, name] = slot.split('\u0000');
        if (agentKey !== change.key) continue;
        const server = servers.find((s) => s.name === serverName);
        const revealed = server ? await revealMcpHeaders(tx, deps, tenantId, change.key, server) : {};
        if (Object.entries(revealed).find(([n]) => n.toLowerCase() === name.toLowerCase())?.[1] !== value) return true;
      }
      return false;
    }
    case 'eval_suite': {
      const stored = (await listTenantSuites(tx, tenantId, {})).find((s) => s.name === change.key);
      const value = scorerSecrets.get(change.key);
      if (value === undefined) return false;
      return !stored?.customScorerWebhookSecret || (await scorerWebhookSecret(tx, deps, tenantId, stored.id, stored.customScorerWebhookSecret)) !== value;
    }
    default:
      return false;
  }
}

/** `domain/intent` -> the id an agent stores (custom intents), or the reference itself (built-in). */
async function intentIdsOf(ctx: ApplyContext, refs: string[]): Promise<string[]> {
  const ids: string[] = [];
  for (const ref of refs) {
    const [domain, key] = ref.split('/');
    if (isBuiltInDomain(domain)) {
      ids.push(ref);
      continue;
    }
    const intent = await findIntent(ctx.tx, ctx.scope.tenantId, domain, key);
    ids.push(intent?.id ?? ref);
  }
  return ids;
}

async function workflowIdsOf(ctx: ApplyContext, keys: string[]): Promise<string[]> {
  const ids: string[] = [];
  for (const key of keys) ids.push((await findWorkflowBy(ctx.tx, ctx.scope.tenantId, { workflowKey: key }))?.id ?? key);
  return ids;
}

/** tools_config with each MCP header: its new value, or the masked value that keeps the stored one. */
function toolsWithSecrets(agentKey: string, config: ToolsConfig | null, values: Map<string, string>): ToolsConfig | null {
  if (!config?.mcp_servers) return config;
  return {
    ...config,
    mcp_servers: config.mcp_servers.map((server) =>
      server.headers
        ? { ...server, headers: Object.fromEntries(Object.keys(server.headers).map((name) => [name, values.get(mcpHeaderSlot(agentKey, server.name, name)) ?? MASKED_HEADER_VALUE])) }
        : server,
    ),
  };
}

async function applyAgent(ctx: ApplyContext, change: ResourceChange) {
  const { tx, deps, scope, actor } = ctx;
  const tenantId = scope.tenantId;
  if (change.action === 'delete') {
    await deleteAgent(tx, tenantId, actor, change.key);
    return;
  }
  const a = desiredOf(ctx, 'agent', change.key);
  const fields = {
    name: a.name,
    description: a.description,
    goal: a.goal,
    system_instructions: a.system_instructions,
    model: a.model,
    fallback_models: a.fallback_models,
    temperature: a.temperature,
    intent_ids: await intentIdsOf(ctx, a.intents),
    workflow_ids: await workflowIdsOf(ctx, a.workflows),
    action_ids: a.action_ids,
    knowledge_domain_keys: a.knowledge_domain_keys,
    tools_config: toolsWithSecrets(a.key, a.tools_config as ToolsConfig | null, ctx.planned.secrets.mcpHeaders),
    memory_config: a.memory_config,
    behavior_config: a.behavior_config,
  };
  if (change.action === 'create' && !(await findAgent(tx, tenantId, a.key))) await createAgent(tx, deps, tenantId, scope.plan, actor, { agent_key: a.key, ...fields });
  else await updateAgent(tx, deps, tenantId, actor, { agentKey: a.key, ...fields });
  if (a.status === 'active') await deployAgent(tx, tenantId, scope.plan, actor, a.key);
  else await deleteAgent(tx, tenantId, actor, a.key);
}

async function datasetIdByName(ctx: ApplyContext, name: string): Promise<string | undefined> {
  return (await listTenantDatasets(ctx.tx, ctx.scope.tenantId)).find((d) => d.name === name)?.id;
}

async function applyDataset(ctx: ApplyContext, change: ResourceChange) {
  const { tx, scope } = ctx;
  const tenantId = scope.tenantId;
  const id = await datasetIdByName(ctx, change.key);
  if (change.action === 'delete') return deleteDataset(tx, tenantId, id!);
  const d = desiredOf(ctx, 'eval_dataset', change.key);
  if (change.action === 'create') {
    await createDataset(tx, tenantId, { name: d.key, description: d.description, cases: d.cases });
    return;
  }
  await updateDataset(tx, tenantId, id!, { description: d.description });
  if (changedField(change, 'cases')) {
    // Cases are replaced as a whole: runs keep their own copies, so earlier results stay readable.
    const dataset = (await listTenantDatasets(tx, tenantId)).find((x) => x.id === id)!;
    for (const c of await listDatasetCases(tx, dataset)) await deleteTenantCase(tx, tenantId, c.id);
    if (d.cases.length) await importCases(tx, tenantId, id!, d.cases);
  }
}

async function applySuite(ctx: ApplyContext, change: ResourceChange) {
  const { tx, deps, scope } = ctx;
  const tenantId = scope.tenantId;
  const stored = (await listTenantSuites(tx, tenantId, {})).find((s) => s.name === change.key);
  if (change.action === 'delete') return deleteSuite(tx, tenantId, stored!.id);
  const s = desiredOf(ctx, 'eval_suite', change.key);
  const datasetId = await datasetIdByName(ctx, s.dataset);
  if (!datasetId) throw invalidInput('The suite names a dataset that does not exist', [{ path: 'dataset', message: `unknown dataset "${s.dataset}"` }]);
  const secret = ctx.planned.secrets.scorerSecrets.get(s.key);
  const fields = {
    judge_rubric: s.judge_rubric,
    pass_threshold: s.pass_threshold,
    fallback_models: s.fallback_models,
    custom_scorer_expression: s.custom_scorer_expression,
    custom_scorer_label: s.custom_scorer_label,
    custom_scorer_webhook_url: s.custom_scorer_webhook_url,
    ...(secret !== undefined ? { custom_scorer_webhook_secret: secret } : s.custom_scorer_webhook_secret === null ? { custom_scorer_webhook_secret: null } : {}),
  };
  if (change.action === 'create') {
    await createSuite(tx, deps, scope.tenant, { name: s.key, domain_key: s.domain, intent_key: s.intent, dataset_id: datasetId, ...fields });
  } else {
    if (stored && (stored.domainKey !== s.domain || stored.intentKey !== s.intent)) {
      throw invalidInput("A suite's intent cannot change", [{ path: 'intent', message: `the suite evaluates ${stored.domainKey}/${stored.intentKey}: give the new intent a new suite` }]);
    }
    await updateSuite(tx, deps, tenantId, { id: stored!.id, name: s.key, dataset_id: datasetId, ...fields });
  }
}
