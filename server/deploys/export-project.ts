// The tenant's resources as a project document: matched by key, ids turned into keys, every field
// present, lists sorted by key, secrets as `${ENV_NAME}` references (a value never leaves the server).
import type { EntityManager } from '../../db/orm.js';
import { listTenantAgents } from '../agents/agent-records.js';
import type { ToolsConfig } from '../agents/agents.schemas.js';
import { DEFAULT_COLLECTION_COLOR } from '../collections/collections.schemas.js';
import { selectCollectionRows } from '../collections/collection-records.js';
import { listDomains } from '../domains/domain-records.js';
import { listDatasetCases, listTenantDatasets, listTenantSuites } from '../evals/eval-records.js';
import { listIntents } from '../intents/intent-records.js';
import { listPromptVersions, listPrompts } from '../prompts/prompt-records.js';
import { findTenantEntity } from '../tenants/tenant-records.js';
import { listDeployedWorkflows } from '../workflows/workflow-records.js';
import type { StepDef } from '../workflows/step-types.js';
import { hasUrlCredentials, isHttpRequestStep, maskUrl } from '../workflows/step-secrets.js';
import type { Project } from './project.schemas.js';

type Json = Record<string, unknown>;

/** The environment variable a secret is exported as: upper-case letters, digits and _. */
export function secretName(...parts: string[]): string {
  return parts.map((p) => p.toUpperCase().replace(/[^A-Z0-9]+/g, '_').replace(/^_+|_+$/g, '')).join('_');
}
export const mcpHeaderSecret = (agentKey: string, server: string, header: string) => `\${${secretName('AGENT', agentKey, 'MCP', server, header)}}`;
export const scorerSecret = (suiteName: string) => `\${${secretName('EVAL_SUITE', suiteName, 'WEBHOOK_SECRET')}}`;
export const stepHeaderSecret = (workflowKey: string, stepId: string, header: string) => `\${${secretName('WORKFLOW', workflowKey, stepId, 'HEADER', header)}}`;

const byKey = <T extends { key: string }>(list: T[]) => list.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));

/** Id <-> key maps the export and the apply translate references with. */
export interface ReferenceMaps {
  collectionSlugById: Map<string, string>;
  intentRefById: Map<string, string>;
  workflowKeyById: Map<string, string>;
}

export async function exportProject(em: EntityManager, tenantId: string): Promise<{ project: Project; refs: ReferenceMaps }> {
  const refs: ReferenceMaps = { collectionSlugById: new Map(), intentRefById: new Map(), workflowKeyById: new Map() };

  const collectionRows = await selectCollectionRows(em, tenantId);
  for (const c of collectionRows) refs.collectionSlugById.set(c.id, c.slug);
  const collections: Project['collections'] = collectionRows.map((c) => ({
    key: c.slug,
    label: c.label,
    color: c.color ?? DEFAULT_COLLECTION_COLOR,
    domain_keys: [...(c.domain_keys ?? [])].sort(),
    tags: c.tags ?? [],
    visibility: c.visibility,
    retrieval_config: (c.retrieval_config as Project['collections'][number]['retrieval_config']) ?? null,
    default_embedding_model: c.default_embedding_model,
    default_chunking_strategy: c.default_chunking_strategy,
    default_chunk_size: c.default_chunk_size,
    default_chunk_overlap: c.default_chunk_overlap,
  }));

  const domainRows = await listDomains(em, tenantId);
  const domains: Project['domains'] = domainRows.map((d) => ({
    key: d.domainKey,
    display_name: d.displayName,
    description: d.description ?? null,
    is_active: d.isActive,
    sort_order: d.sortOrder,
  }));

  const intents: Project['intents'] = [];
  for (const domain of domainRows) {
    for (const i of await listIntents(em, tenantId, domain)) {
      refs.intentRefById.set(i.id, `${i.domainKey}/${i.intentKey}`);
      const retrieval = i.retrievalConfig as { enabled: boolean; collection_ids?: string[]; top_k?: number } | null;
      intents.push({
        domain: i.domainKey,
        key: i.intentKey,
        display_name: i.displayName,
        description: i.description ?? null,
        prompt_template: i.promptTemplate,
        prompt_binding: (i.promptBinding as Project['intents'][number]['prompt_binding']) ?? null,
        output_schema: (i.outputSchema as Json | null) ?? null,
        input_schema: (i.inputSchema as Json | null) ?? null,
        guardrails_config: (i.guardrailsConfig as Project['intents'][number]['guardrails_config']) ?? null,
        agent_config: (i.agentConfig as Json | null) ?? null,
        execution_config: (i.executionConfig as Project['intents'][number]['execution_config']) ?? null,
        retrieval_config: retrieval
          ? {
              enabled: retrieval.enabled,
              ...(retrieval.collection_ids ? { collections: retrieval.collection_ids.map((id) => refs.collectionSlugById.get(id) ?? id).sort() } : {}),
              ...(retrieval.top_k !== undefined ? { top_k: retrieval.top_k } : {}),
            }
          : null,
        cache_config: (i.cacheConfig as Project['intents'][number]['cache_config']) ?? null,
        sort_order: i.sortOrder,
        is_active: i.isActive,
      });
    }
  }

  const prompts: Project['prompts'] = [];
  for (const p of await listPrompts(em, tenantId)) {
    const versions = await listPromptVersions(em, p);
    prompts.push({
      key: p.promptKey,
      name: p.name,
      description: p.description ?? null,
      versions: [...versions].sort((x, y) => x.versionNumber - y.versionNumber).map((v) => ({ template: v.template, note: v.note ?? null })),
    });
  }

  const tenant = await findTenantEntity(em, tenantId);
  const guardrails: Project['guardrails'] = [{ key: 'tenant', config: (tenant?.guardrailsConfig as Project['guardrails'][number]['config']) ?? null }];

  const workflowRows = await listDeployedWorkflows(em, tenantId);
  for (const w of workflowRows) refs.workflowKeyById.set(w.id, w.workflowKey);
  const workflows: Project['workflows'] = workflowRows.map((w) => ({
    key: w.workflowKey,
    name: w.name,
    description: w.description ?? null,
    is_active: w.isActive,
    max_concurrent_runs: w.maxConcurrentRuns ?? null,
    steps: exportSteps(w.workflowKey, (w.liveSteps ?? []) as StepDef[]),
  }));

  const agents: Project['agents'] = (await listTenantAgents(em, tenantId)).map((a) => ({
    key: a.agentKey,
    name: a.name,
    description: a.description ?? null,
    goal: a.goal,
    system_instructions: a.systemInstructions ?? null,
    model: a.model ?? null,
    fallback_models: a.fallbackModels ?? null,
    temperature: a.temperature == null ? null : Number(a.temperature),
    status: a.status === 'active' ? 'active' : 'inactive',
    intents: a.intentIds.map((id) => refs.intentRefById.get(id) ?? id),
    workflows: a.workflowIds.map((id) => refs.workflowKeyById.get(id) ?? id),
    action_ids: a.actionIds,
    knowledge_domain_keys: a.knowledgeDomainKeys,
    tools_config: toolsWithSecretRefs(a.agentKey, a.toolsConfig as ToolsConfig | null),
    memory_config: (a.memoryConfig as Project['agents'][number]['memory_config']) ?? null,
    behavior_config: (a.behaviorConfig as Project['agents'][number]['behavior_config']) ?? null,
  }));

  const datasetRows = await listTenantDatasets(em, tenantId);
  const datasetNameById = new Map(datasetRows.map((d) => [d.id, d.name]));
  const evalDatasets: Project['eval_datasets'] = [];
  for (const d of datasetRows) {
    const cases = await listDatasetCases(em, d);
    evalDatasets.push({
      key: d.name,
      description: d.description ?? null,
      cases: cases.map((c) => ({
        input: c.input as Json,
        message: c.message ?? null,
        expected_output: (c.expectedOutput as string | Json | null | undefined) ?? null,
        notes: c.notes ?? null,
      })),
    });
  }
  const evalSuites: Project['eval_suites'] = (await listTenantSuites(em, tenantId, {})).map((s) => ({
    key: s.name,
    domain: s.domainKey,
    intent: s.intentKey,
    dataset: datasetNameById.get(typeof s.dataset === 'string' ? s.dataset : s.dataset.id) ?? '',
    judge_rubric: s.judgeRubric ?? null,
    pass_threshold: Number(s.passThreshold),
    fallback_models: s.fallbackModels ?? null,
    custom_scorer_expression: s.customScorerExpression ?? null,
    custom_scorer_label: s.customScorerLabel ?? null,
    custom_scorer_webhook_url: s.customScorerWebhookUrl ?? null,
    custom_scorer_webhook_secret: s.customScorerWebhookSecret ? scorerSecret(s.name) : null,
  }));

  return {
    project: {
      domains: byKey(domains),
      prompts: byKey(prompts),
      collections: byKey(collections),
      intents: intents.sort((a, b) => (`${a.domain}/${a.key}` < `${b.domain}/${b.key}` ? -1 : 1)),
      guardrails,
      workflows: byKey(workflows),
      agents: byKey(agents),
      eval_datasets: byKey(evalDatasets),
      eval_suites: byKey(evalSuites),
    },
    refs,
  };
}

/**
 * An http_request step's config as a project holds it: each header value as a reference
 * (`${WORKFLOW_<KEY>_<STEP>_HEADER_<NAME>}`), a URL that carries credentials masked (`***` for each
 * credential: kept as stored when applied as it is, replaced by a URL given in full).
 */
function exportStepConfig(workflowKey: string, step: StepDef): Json {
  const config = (step.config ?? {}) as Json;
  if (!isHttpRequestStep(step)) return config;
  const { url_secret: secretUrl, ...out } = config;
  if (out.headers && typeof out.headers === 'object') {
    out.headers = Object.fromEntries(Object.keys(out.headers).map((name) => [name, stepHeaderSecret(workflowKey, step.id, name)]));
  }
  if (secretUrl === undefined && typeof out.url === 'string' && hasUrlCredentials(out.url)) out.url = maskUrl(out.url);
  return out;
}

/**
 * Steps with stable ids: a client-chosen id is kept; a generated one (a uuid) becomes `step_<n>` by
 * order, and the step links follow it. Credentials of http_request steps as references or masked.
 */
export function exportSteps(workflowKey: string, steps: StepDef[]): Project['workflows'][number]['steps'] {
  const stable = /^[A-Za-z][A-Za-z0-9_]{0,63}$/;
  const taken = new Set(steps.map((s) => s.id).filter((id) => stable.test(id)));
  const rename = new Map<string, string>();
  let n = 0;
  for (const s of steps) {
    if (stable.test(s.id)) continue;
    let id: string;
    do id = `step_${++n}`;
    while (taken.has(id));
    taken.add(id);
    rename.set(s.id, id);
  }
  const idOf = (id: string | null | undefined) => (id ? (rename.get(id) ?? id) : null);
  return steps.map((s) => ({
    id: idOf(s.id)!,
    step_type: s.step_type as Project['workflows'][number]['steps'][number]['step_type'],
    name: s.name ?? null,
    action_id: s.action_id ?? null,
    config: exportStepConfig(workflowKey, s),
    position_x: s.position_x ?? null,
    position_y: s.position_y ?? null,
    guidance: s.guidance ?? null,
    on_success: idOf(s.on_success_step_id),
    on_failure: idOf(s.on_failure_step_id),
  }));
}

/** MCP header values as references to the environment (`${AGENT_<KEY>_MCP_<SERVER>_<HEADER>}`). */
function toolsWithSecretRefs(agentKey: string, config: ToolsConfig | null): Project['agents'][number]['tools_config'] {
  if (!config?.mcp_servers) return config;
  return {
    ...config,
    mcp_servers: config.mcp_servers.map((server) =>
      server.headers ? { ...server, headers: Object.fromEntries(Object.keys(server.headers).map((name) => [name, mcpHeaderSecret(agentKey, server.name, name)])) } : server,
    ),
  };
}
