import { z } from 'zod';
import { fallbackModelsSchema } from '../llm/llm.schemas.js';
import { guardrailsConfigSchema } from '../guardrails/guardrails.types.js';
import { bodyBoolean, bodyInt, bodyNumber, keyPattern, noCoerce, paginationSchema } from '../common/schemas.js';
import { checkJsonSchema } from '../common/json-schema.js';


const jsonSchemaField = z
  .record(z.string(), z.unknown())
  .superRefine((schema, ctx) => {
    for (const issue of checkJsonSchema(schema)) {
      ctx.addIssue({ code: 'custom', message: `not a usable JSON Schema: ${issue.path ? `${issue.path} ` : ''}${issue.message}` });
    }
  });

export const executionConfigSchema = z
  .object({
    model: z.string().min(1).max(200).nullable().optional(),
    temperature: bodyNumber(0, 2).nullable().optional(),
    max_tokens: bodyInt(1, 200_000).nullable().optional(),
    timeout_ms: bodyInt(100, 600_000).nullable().optional(),
    fallback_models: fallbackModelsSchema.nullable().optional(),
  })
  .strict();

export const cacheConfigSchema = z.object({ enabled: bodyBoolean(), ttl_seconds: bodyInt(1, 30 * 24 * 3600).optional() }).strict();

export const retrievalConfigSchema = z
  .object({
    enabled: bodyBoolean(),
    collection_ids: z.array(z.string().max(64)).max(100).optional(),
    top_k: bodyInt(1, 50).optional(),
  })
  .strict();

export const promptBindingSchema = z.object({ prompt_key: keyPattern, version: bodyInt(1) }).strict();

/** Every field of a custom intent's definition: what a version holds and what a diff compares. */
export const definitionShape = {
  display_name: z.string().trim().min(1).max(200),
  description: z.string().max(5000).nullable(),
  prompt_template: z.string().min(1).max(100_000),
  prompt_binding: noCoerce(promptBindingSchema).nullable(),
  output_schema: noCoerce(jsonSchemaField).nullable(),
  input_schema: noCoerce(jsonSchemaField).nullable(),
  guardrails_config: noCoerce(guardrailsConfigSchema).nullable(),
  agent_config: noCoerce(z.record(z.string(), z.unknown())).nullable(),
  execution_config: noCoerce(executionConfigSchema).nullable(),
  retrieval_config: noCoerce(retrievalConfigSchema).nullable(),
  cache_config: noCoerce(cacheConfigSchema).nullable(),
  sort_order: bodyInt(-1_000_000, 1_000_000),
  is_active: bodyBoolean(),
};
export const DEFINITION_FIELDS = Object.keys(definitionShape) as (keyof typeof definitionShape)[];
export type DefinitionField = (typeof DEFINITION_FIELDS)[number];

export const createIntentInput = z.object({
  domainKey: z.string().max(100),
  intent_key: keyPattern,
  display_name: definitionShape.display_name,
  prompt_template: definitionShape.prompt_template,
  description: definitionShape.description.optional(),
  prompt_binding: definitionShape.prompt_binding.optional(),
  output_schema: definitionShape.output_schema.optional(),
  input_schema: definitionShape.input_schema.optional(),
  guardrails_config: definitionShape.guardrails_config.optional(),
  agent_config: definitionShape.agent_config.optional(),
  execution_config: definitionShape.execution_config.optional(),
  retrieval_config: definitionShape.retrieval_config.optional(),
  cache_config: definitionShape.cache_config.optional(),
  sort_order: definitionShape.sort_order.optional(),
  is_active: definitionShape.is_active.optional(),
});
export type CreateIntentInput = z.infer<typeof createIntentInput>;

export const updateIntentInput = z.object({
  domainKey: z.string().max(100),
  key: z.string().max(100),
  ...Object.fromEntries(Object.entries(definitionShape).map(([k, v]) => [k, v.optional()])),
} as { domainKey: z.ZodString; key: z.ZodString } & { [K in DefinitionField]: z.ZodOptional<(typeof definitionShape)[K]> });
export type UpdateIntentInput = z.infer<typeof updateIntentInput>;

const json = z.record(z.string(), z.unknown()).nullable();

export const customIntentSchema = z
  .object({
    id: z.string(),
    domain_key: z.string(),
    intent_key: z.string(),
    display_name: z.string(),
    description: z.string().nullable(),
    prompt_template: z.string(),
    prompt_binding: json,
    output_schema: json,
    input_schema: json,
    guardrails_config: json,
    agent_config: json,
    execution_config: json,
    retrieval_config: json,
    cache_config: json,
    sort_order: z.number().int(),
    is_active: z.boolean(),
    current_version: z.number().int(),
    created_at: z.string(),
    updated_at: z.string(),
  })
  .meta({ id: 'CustomIntent' });
export type CustomIntentDto = z.infer<typeof customIntentSchema>;

export const versionSummarySchema = z
  .object({
    id: z.string(),
    version_number: z.number().int(),
    changed_fields: z.array(z.string()),
    change_type: z.enum(['create', 'update', 'restore']),
    restored_from_version: z.number().int().nullable(),
    created_by: z.string().nullable(),
    actorName: z.string().nullable(),
    created_at: z.string(),
  })
  .meta({ id: 'CustomIntentVersionSummary' });
export type VersionSummaryDto = z.infer<typeof versionSummarySchema>;

export const versionSchema = versionSummarySchema
  .extend({ intent_id: z.string(), domain_key: z.string(), intent_key: z.string(), definition: z.record(z.string(), z.unknown()) })
  .meta({ id: 'CustomIntentVersion' });

export const feedItemSchema = versionSummarySchema.extend({ intent_id: z.string(), domain_key: z.string(), intent_key: z.string() }).meta({ id: 'IntentVersionFeedItem' });

export const diffSchema = z
  .object({
    from: z.number().int(),
    to: z.number().int(),
    changes: z.array(z.object({ field: z.string(), before: z.unknown(), after: z.unknown() })),
  })
  .meta({ id: 'CustomIntentVersionDiff' });
export type IntentVersionDiff = z.infer<typeof diffSchema>;

export const feedOutput = z.object({ versions: z.array(feedItemSchema), pagination: paginationSchema });
