// The project format of deploys as code: every resource a tenant defines, matched by key (never by
// server id), so one project applies to any server or tenant. Each array item is one YAML file of a
// project folder; the CLI turns the folder into this document and the server diffs and applies it.
//
// Every field is present in an export (defaults filled in), and a field left out of a file takes the
// same default, so export -> apply -> export is byte-identical and a plan after an apply is empty.
import { z } from 'zod';
import { behaviorConfigSchema, memoryConfigSchema, toolsConfigSchema } from '../agents/agents.schemas.js';
import { CHUNKING_STRATEGIES, VISIBILITIES } from '../collections/collections.schemas.js';
import { bodyBoolean, bodyInt, bodyNumber, keyPattern, noCoerce } from '../common/schemas.js';
import { expectedOutputField, jsonObject } from '../evals/evals.schemas.js';
import { guardrailsConfigSchema } from '../guardrails/guardrails.types.js';
import { cacheConfigSchema, definitionShape, executionConfigSchema, promptBindingSchema } from '../intents/custom-intents.schemas.js';
import { STEP_TYPES } from '../workflows/step-types.js';
import { fallbackModelsSchema } from '../llm/llm.schemas.js';
import { MAX_STEPS, workflowKeyInput } from '../workflows/workflows.schemas.js';

/** A secret in a project: `${ENV_NAME}`, filled in from the environment of `liya apply`, never a value on disk. */
export const SECRET_REFERENCE = /^\$\{([A-Z_][A-Z0-9_]{0,127})\}$/;

const nullable = <T extends z.ZodType>(schema: T) => schema.nullable().default(null);
const list = <T extends z.ZodType>(item: T, max: number) => z.array(item).max(max).default([]);
const text = (max: number) => z.string().max(max);

export const domainResource = z
  .strictObject({
    key: keyPattern.describe('domain_key'),
    display_name: z.string().trim().min(1).max(200),
    description: nullable(text(5000)),
    is_active: bodyBoolean().default(true),
    sort_order: bodyInt(-1_000_000, 1_000_000).default(0),
  })
  .meta({ id: 'ProjectDomain' });

const retrievalResource = z
  .strictObject({
    enabled: bodyBoolean(),
    collections: z.array(keyPattern).max(100).optional().describe('Collection slugs (the API stores their ids as collection_ids)'),
    top_k: bodyInt(1, 50).optional(),
  })
  .describe('retrieval_config, with collections named by slug');

export const intentResource = z
  .strictObject({
    domain: keyPattern.describe('The custom domain (a domain of this project or one that exists)'),
    key: keyPattern.describe('intent_key'),
    display_name: definitionShape.display_name,
    description: nullable(text(5000)),
    prompt_template: definitionShape.prompt_template,
    prompt_binding: nullable(noCoerce(promptBindingSchema)),
    output_schema: definitionShape.output_schema.default(null),
    input_schema: definitionShape.input_schema.default(null),
    guardrails_config: nullable(noCoerce(guardrailsConfigSchema)),
    agent_config: nullable(noCoerce(z.record(z.string(), z.unknown()))),
    execution_config: nullable(noCoerce(executionConfigSchema)),
    retrieval_config: nullable(noCoerce(retrievalResource)),
    cache_config: nullable(noCoerce(cacheConfigSchema)),
    sort_order: bodyInt(-1_000_000, 1_000_000).default(0),
    is_active: bodyBoolean().default(true),
  })
  .meta({ id: 'ProjectIntent' });

export const promptResource = z
  .strictObject({
    key: keyPattern.describe('prompt_key'),
    name: z.string().trim().min(1).max(200),
    description: nullable(text(5000)),
    versions: z
      .array(z.strictObject({ template: z.string().min(1).max(100_000), note: nullable(text(2000)) }))
      .min(1)
      .max(1000)
      .describe('Every version, oldest first. Versions are immutable: an apply appends the new ones at the end, so version numbers (and prompt_binding) mean the same on every server'),
  })
  .meta({ id: 'ProjectPrompt' });

const color = z
  .string()
  .regex(/^#(?:[0-9a-fA-F]{3}|[0-9a-fA-F]{6})$/, 'Use a hex color: #rgb or #rrggbb')
  .transform((c) => c.toLowerCase());

export const collectionResource = z
  .strictObject({
    key: z.string().min(1).max(100).regex(/^[a-z0-9_-]+$/, 'Use lower-case letters, digits, - and _').describe('slug'),
    label: z.string().trim().min(1).max(200),
    color: color.default('#64748b'),
    domain_keys: z
      .array(z.string().min(1).max(100))
      .min(1)
      .max(100)
      .transform((keys) => [...new Set(keys)].sort()),
    tags: z
      .array(z.string().trim().min(1).max(50))
      .max(50)
      .default([])
      .transform((tags) => [...new Set(tags)]),
    visibility: z.enum(VISIBILITIES).default('workspace'),
    retrieval_config: nullable(
      noCoerce(
        z.strictObject({
          scope: z.enum(['collection_only', 'collection_plus_domain']),
          boost_priority: bodyNumber(0, 10),
          fallback_when_empty: z.enum(['domain_fallback', 'no_results']),
        }),
      ),
    ),
    default_embedding_model: nullable(z.string().trim().min(1).max(200)),
    default_chunking_strategy: nullable(z.enum(CHUNKING_STRATEGIES)),
    default_chunk_size: nullable(bodyInt(50, 20_000)),
    default_chunk_overlap: nullable(bodyInt(0, 4_999)),
  })
  .meta({ id: 'ProjectCollection' });

export const guardrailsResource = z
  .strictObject({
    key: z.literal('tenant').default('tenant').describe('There is one: the tenant default used by runs whose intent sets none'),
    config: nullable(noCoerce(guardrailsConfigSchema)),
  })
  .meta({ id: 'ProjectGuardrails' });

const stepId = z.string().regex(/^[A-Za-z][A-Za-z0-9_]{0,63}$/, 'a stable step id: a letter, then letters, digits and _ (at most 64)');

export const stepResource = z.strictObject({
  id: stepId,
  step_type: z.enum(STEP_TYPES),
  name: nullable(text(200)),
  action_id: nullable(text(100)),
  config: noCoerce(z.record(z.string(), z.unknown())).default({}),
  position_x: nullable(bodyNumber(-1e9, 1e9)),
  position_y: nullable(bodyNumber(-1e9, 1e9)),
  guidance: nullable(text(5000)),
  on_success: nullable(stepId).describe('The id of the next step'),
  on_failure: nullable(stepId).describe('The id of the step to go to on failure'),
});

export const workflowResource = z
  .strictObject({
    key: workflowKeyInput.describe('workflow_key (not a path word under /v1/workflows, not a UUID)'),
    name: z.string().trim().min(1).max(200),
    description: nullable(text(5000)),
    is_active: bodyBoolean().default(true).describe('Deployed and switched on (true) or deployed and switched off'),
    max_concurrent_runs: nullable(bodyInt(1, 10_000)),
    steps: z.array(stepResource).min(1).max(MAX_STEPS),
  })
  .meta({ id: 'ProjectWorkflow' });

export const agentResource = z
  .strictObject({
    key: keyPattern.describe('agent_key'),
    name: z.string().trim().min(1).max(200),
    description: nullable(text(5000)),
    goal: z.string().trim().min(1).max(10_000),
    system_instructions: nullable(text(50_000)),
    model: nullable(z.string().trim().min(1).max(200)),
    fallback_models: nullable(fallbackModelsSchema),
    temperature: nullable(bodyNumber(0, 2)),
    status: z.enum(['active', 'inactive']).default('active').describe('active: deployed; inactive: kept but not runnable'),
    intents: list(z.string().regex(/^[a-z0-9_-]+\/[a-z0-9_-]+$/i, 'domain/intent_key'), 100).describe('Intents as `domain/intent_key` (custom or built-in)'),
    workflows: list(keyPattern, 100).describe('Workflow keys'),
    action_ids: list(z.string().min(1).max(200), 100),
    knowledge_domain_keys: list(z.string().min(1).max(200), 100),
    tools_config: nullable(noCoerce(toolsConfigSchema)).describe('MCP header values are secrets: write `${ENV_NAME}`'),
    memory_config: nullable(noCoerce(memoryConfigSchema)),
    behavior_config: nullable(noCoerce(behaviorConfigSchema)),
  })
  .meta({ id: 'ProjectAgent' });

export const evalCaseResource = z.strictObject({
  input: jsonObject,
  message: nullable(text(20_000)),
  expected_output: expectedOutputField.default(null),
  notes: nullable(text(5000)),
});

export const evalDatasetResource = z
  .strictObject({
    key: z.string().trim().min(1).max(200).describe('The dataset name'),
    description: nullable(text(5000)),
    cases: z.array(evalCaseResource).max(5000).describe('In a file: inline, or `cases_file:` a .jsonl or .csv file beside it'),
  })
  .meta({ id: 'ProjectEvalDataset' });

export const evalSuiteResource = z
  .strictObject({
    key: z.string().trim().min(1).max(200).describe('The suite name'),
    domain: z.string().min(1).max(100),
    intent: z.string().min(1).max(100),
    dataset: z.string().trim().min(1).max(200).describe('The name of a dataset of this project (or of the server)'),
    judge_rubric: nullable(text(20_000)),
    pass_threshold: bodyNumber(1, 5).default(4),
    fallback_models: nullable(fallbackModelsSchema).describe('Models that serve the judge, in order, when its model fails or cools down; null: the tenant\'s chain, then the platform\'s; []: never fall back'),
    custom_scorer_expression: nullable(z.string().trim().min(1).max(5000)),
    custom_scorer_label: nullable(text(100)),
    custom_scorer_webhook_url: nullable(text(2000)),
    custom_scorer_webhook_secret: nullable(z.string().min(1).max(500)).describe('A secret: write `${ENV_NAME}`'),
  })
  .meta({ id: 'ProjectEvalSuite' });

/** The resource kinds, in the order they are applied (what a resource refers to comes first). */
export const RESOURCE_KINDS = ['domain', 'prompt', 'collection', 'intent', 'guardrails', 'workflow', 'agent', 'eval_dataset', 'eval_suite'] as const;
export type ResourceKind = (typeof RESOURCE_KINDS)[number];

export const RESOURCE_SCHEMAS = {
  domain: domainResource,
  prompt: promptResource,
  collection: collectionResource,
  intent: intentResource,
  guardrails: guardrailsResource,
  workflow: workflowResource,
  agent: agentResource,
  eval_dataset: evalDatasetResource,
  eval_suite: evalSuiteResource,
} as const satisfies Record<ResourceKind, z.ZodType>;

/** The project document: one list per kind. */
export const projectSchema = z
  .strictObject({
    domains: z.array(domainResource).max(1000).default([]),
    prompts: z.array(promptResource).max(1000).default([]),
    collections: z.array(collectionResource).max(1000).default([]),
    intents: z.array(intentResource).max(5000).default([]),
    guardrails: z.array(guardrailsResource).max(1).default([]).describe('Absent: the tenant default is left as it is'),
    workflows: z.array(workflowResource).max(1000).default([]),
    agents: z.array(agentResource).max(1000).default([]),
    eval_datasets: z.array(evalDatasetResource).max(1000).default([]),
    eval_suites: z.array(evalSuiteResource).max(1000).default([]),
  })
  .meta({ id: 'Project' });
export type Project = z.output<typeof projectSchema>;

/** The list of the project document that holds each kind. */
export const KIND_LIST = {
  domain: 'domains',
  prompt: 'prompts',
  collection: 'collections',
  intent: 'intents',
  guardrails: 'guardrails',
  workflow: 'workflows',
  agent: 'agents',
  eval_dataset: 'eval_datasets',
  eval_suite: 'eval_suites',
} as const satisfies Record<ResourceKind, keyof Project>;

/** A resource's key within its kind (an intent's includes its domain). */
export function resourceKey(kind: ResourceKind, resource: { key: string; domain?: string }): string {
  return kind === 'intent' ? `${resource.domain}/${resource.key}` : resource.key;
}
