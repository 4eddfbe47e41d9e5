import { z } from 'zod';
import { fallbackModelsSchema } from '../llm/llm.schemas.js';
import { AGENT_RUN_STATUSES, AGENT_STATUSES } from '../../db/column-values.js';
import { historyPageQuery, historyPaginationSchema } from '../common/pagination.js';
import { bodyBoolean, bodyInt, bodyNumber, noCoerce } from '../common/schemas.js';
import { keyPattern } from '../common/schemas.js';

/** Platform tools an agent may be given (tools_config.enabled_platform_tools). */
export const PLATFORM_TOOLS = ['current_time', 'http_get', 'send_email', 'ask_user', 'remember', 'recall'] as const;
export type PlatformTool = (typeof PLATFORM_TOOLS)[number];

const MASKED = '***';
/** What a stored MCP header value is shown as; sending it back unchanged keeps the stored value. */
export const MASKED_HEADER_VALUE = MASKED;

// Config objects take what they know, like the top level of the body: keys they do not know (at
// any depth) are dropped, not refused, so a client written against a newer or older shape still works.
const UNKNOWN_KEYS_DROPPED = 'Keys not listed here, at any depth, are ignored and not stored';

const headerName = z.string().regex(/^[A-Za-z0-9!#$%&'*+.^_`|~-]{1,100}$/, 'not a valid HTTP header name');
const toolName = z.string().min(1).max(128);

export const mcpServerSchema = z
  .object({
    name: z.string().regex(/^[a-z0-9_-]{1,32}$/, 'lower-case letters, digits, - and _ (at most 32)').describe('Prefix of the server\'s tool names'),
    url: z
      .string()
      .max(2000)
      .url()
      .refine((u) => /^https?:\/\//i.test(u), 'must be an http or https URL')
      .describe('Streamable HTTP endpoint of the MCP server; private addresses need OUTBOUND_ALLOWED_HOSTS'),
    headers: z
      .record(headerName, z.string().max(4000))
      .refine((h) => Object.keys(h).length <= 20, 'at most 20 headers')
      .optional()
      .describe(`Sent with every request (e.g. Authorization). Stored encrypted and shown as "${MASKED}"; send "${MASKED}" back to keep a stored value`),
    allowed_tools: z.array(toolName).max(200).optional().describe('Only these tools of the server are offered (default: all)'),
    timeout_ms: bodyInt(100, 120_000).optional().describe('Per tool call (default: behavior_config.execution.tool_timeout_ms)'),
  });
export type McpServerInput = z.infer<typeof mcpServerSchema>;

export const toolsConfigSchema = z
  .object({
    enabled_platform_tools: z.array(z.enum(PLATFORM_TOOLS)).max(PLATFORM_TOOLS.length).optional(),
    custom_tool_refs: z.array(z.string().min(1).max(200)).max(100).optional().describe('Stored for reference; not offered to the model'),
    permission_policy: z
      .object({
        allow: z.array(toolName).max(500).optional().describe('Only these tool names are offered (default: every configured tool)'),
        deny: z.array(toolName).max(500).optional().describe('These tool names are never offered'),
      })
      .optional(),
    mcp_servers: z
      .array(mcpServerSchema)
      .max(10)
      .refine((list) => new Set(list.map((s) => s.name)).size === list.length, 'MCP server names must be unique')
      .optional(),
    notify_email: z.string().email().max(320).optional().describe('Recipient of the send_email tool (required when send_email is enabled)'),
    notify_label: z.string().max(200).optional().describe('Subject prefix of mails sent by the send_email tool'),
    service_locations: z.array(z.string().min(1).max(200)).max(100).optional().describe('Told to the model as facts'),
    transfer_phone_number: z.string().max(50).optional().describe('Given to users who ask for a human'),
    transfer_label: z.string().max(200).optional(),
  })
  .describe(UNKNOWN_KEYS_DROPPED);
export type ToolsConfig = z.infer<typeof toolsConfigSchema>;

export const memoryConfigSchema = z
  .object({
    conversation_memory: z
      .union([
        bodyBoolean(),
        z.object({
          enabled: bodyBoolean().optional(),
          max_tokens: bodyInt(100, 100_000).optional().describe('Token budget of earlier turns (default 4000); older turns are dropped'),
        }),
      ])
      .optional()
      .describe('Earlier turns of the session given to the model (default: on, 4000 tokens)'),
    user_preferences: bodyBoolean().optional().describe('Keep input.preferences per end user (input.user_id); tool get_user_preferences'),
    persistent_memory: bodyBoolean().optional().describe('Tools remember / recall, per end user (input.user_id)'),
    retention_days: bodyInt(1, 3650).optional().describe('Sessions idle this long are deleted with their transcript (default 30)'),
  })
  .describe(UNKNOWN_KEYS_DROPPED);
export type MemoryConfig = z.infer<typeof memoryConfigSchema>;

export const behaviorConfigSchema = z
  .object({
    planning: z
      .union([bodyBoolean(), z.string().max(2000)])
      .optional()
      .describe(
        'Ask the model to state a short plan before acting (default false). A string turns planning on and is given to the model ' +
          'as its planning instruction (e.g. "List the tools you will call, in order"); it is stored as sent. A blank string is planning off',
      ),
    execution: z
      .object({
        parallel_tool_calls: bodyBoolean().optional().describe('Let the model call several tools in one step (default true); they run concurrently'),
        tool_timeout_ms: bodyInt(100, 120_000).optional().describe('Per tool call (default 30000)'),
      })
      .optional(),
    fallback: z.string().max(2000).optional().describe('The answer when the model fails or the answer is blocked'),
    termination: z
      .object({
        stop_on_tools: z.array(toolName).max(50).optional().describe('The run ends (completed) right after one of these tools has run'),
      })
      .optional(),
    max_steps: bodyInt(1, 50).optional().describe('Model calls per run (default 10)'),
    max_output_tokens: bodyInt(1, 100_000).optional().describe('Per model call (default 2048)'),
    max_cost_usd: bodyNumber(0, 1000).optional().describe('Hard cap on what one run may spend on model calls (default: none)'),
  })
  .describe(UNKNOWN_KEYS_DROPPED);
export type BehaviorConfig = z.infer<typeof behaviorConfigSchema>;

const idList = (what: string) => z.array(z.string().min(1).max(200)).max(100).describe(what);

const agentFields = {
  name: z.string().trim().min(1).max(200),
  description: z.string().max(5000).nullable(),
  goal: z.string().trim().min(1).max(10_000),
  system_instructions: z.string().max(50_000).nullable(),
  model: z.string().trim().min(1).max(200).nullable(),
  fallback_models: fallbackModelsSchema.nullable().describe('Models that serve, in order, when `model` fails (rate limit, outage, timeout) or cools down; null: the tenant\'s chain, then the platform\'s; []: never fall back'),
  temperature: bodyNumber(0, 2).nullable(),
  intent_ids: idList('Custom intent ids or `domain/intent_key` of built-in intents'),
  workflow_ids: idList('Workflow ids of the tenant'),
  action_ids: idList('Action ids (stored; not offered to the model)'),
  knowledge_domain_keys: idList('Domains whose knowledge the knowledge_search tool searches'),
  tools_config: noCoerce(toolsConfigSchema).nullable(),
  memory_config: noCoerce(memoryConfigSchema).nullable(),
  behavior_config: noCoerce(behaviorConfigSchema).nullable(),
};

/** Every field of `shape`, optional. */
const optional = <T extends Record<string, z.ZodType>>(shape: T) =>
  Object.fromEntries(Object.entries(shape).map(([k, v]) => [k, v.optional()])) as { [K in keyof T]: z.ZodOptional<T[K]> };

const { name, goal, ...otherFields } = agentFields;

export const createAgentInput = z
  .object({ agent_key: keyPattern, name, goal, ...optional(otherFields) })
  .meta({ id: 'CreateAgentRequest' });
export type CreateAgentInput = z.infer<typeof createAgentInput>;

export const agentKeyParam = z.object({ agentKey: z.string().max(100) });

export const updateAgentInput = agentKeyParam
  .extend({
    ...optional(agentFields),
    status: z.enum(AGENT_STATUSES).optional().describe('`draft` or `inactive`; `active` only through deploy (409 DEPLOY_REQUIRED)'),
  })
  .meta({ id: 'UpdateAgentRequest' });
export type UpdateAgentInput = z.infer<typeof updateAgentInput>;

const json = z.record(z.string(), z.unknown());
const sourced = z.object({ value: z.unknown(), source: z.enum(['agent', 'platform_default', 'provider_default']) });

export const agentSchema = z
  .object({
    id: z.string(),
    tenant_id: z.string(),
    agent_key: z.string(),
    name: z.string(),
    description: z.string().nullable(),
    goal: z.string(),
    system_instructions: z.string().nullable(),
    model: z.string().nullable(),
    fallback_models: z.array(z.string()).nullable().describe('The agent\'s fallback chain (null: the tenant\'s, then the platform\'s)'),
    temperature: z.number().nullable(),
    status: z.enum(AGENT_STATUSES),
    intent_ids: z.array(z.string()),
    workflow_ids: z.array(z.string()),
    action_ids: z.array(z.string()),
    knowledge_domain_keys: z.array(z.string()),
    tools_config: json.nullable(),
    memory_config: json.nullable(),
    behavior_config: json.nullable(),
    guardrail_policy_id: z.string().nullable().describe('Always null: runs use the tenant\'s default guardrails'),
    created_at: z.string(),
    updated_at: z.string(),
    effective_runtime_config: z.record(z.string(), sourced).optional().describe('Single-agent read only: each field\'s value and where it comes from'),
  })
  .meta({ id: 'Agent' });
export type AgentDto = z.infer<typeof agentSchema>;

export const agentListItemSchema = z
  .object({
    agent: z.string(),
    displayName: z.string(),
    description: z.string().nullable(),
    goal: z.string(),
    status: z.enum(AGENT_STATUSES),
    endpoint: z.string(),
    method: z.literal('POST'),
    inputSchema: json,
  })
  .meta({ id: 'AgentListItem' });
export type AgentListItem = z.infer<typeof agentListItemSchema>;

export const AGENT_INPUT_SCHEMA = {
  type: 'object',
  properties: { message: { type: 'string' } },
  required: ['message'],
} as const;

export const runAgentInput = agentKeyParam
  .extend({
    input: noCoerce(
      z
        .looseObject({
          message: z.string().max(100_000).regex(/\S/, 'must not be blank'),
          user_id: z.string().min(1).max(200).optional().describe('The end user: keys preferences and persistent memory'),
          preferences: z.record(z.string(), z.unknown()).optional().describe('Stored for the end user when memory_config.user_preferences is on'),
        })
        .describe('`message` is the user\'s turn; other properties are kept with the run'),
    ),
    session_id: z.string().max(64).optional().describe('Continue this conversation (default: a new one)'),
  })
  .meta({ id: 'AgentRunRequest' });
export type RunAgentInput = z.infer<typeof runAgentInput>;

export const agentRunResultSchema = z
  .object({
    run_id: z.string(),
    session_id: z.string(),
    status: z.enum(AGENT_RUN_STATUSES),
    output: z.string(),
    steps: z.number().int().describe('Model calls made'),
    total_cost: z.number(),
    total_latency_ms: z.number().int(),
  })
  .meta({ id: 'AgentRunResult' });
export type AgentRunResult = z.infer<typeof agentRunResultSchema>;

export const traceStepSchema = z
  .object({
    index: z.number().int(),
    type: z.enum(['llm', 'tool']),
    name: z.string(),
    input: z.unknown(),
    output: z.unknown(),
    tokens: z.number().int(),
    cost_usd: z.number(),
    latency_ms: z.number().int(),
    started_at: z.string(),
    error: z.string().nullable(),
  })
  .meta({ id: 'AgentTraceStep' });

export const agentRunSummarySchema = agentRunResultSchema
  .extend({
    user_id: z.string().nullable(),
    model: z.string().nullable(),
    error: json.nullable(),
    started_at: z.string(),
    completed_at: z.string().nullable(),
  })
  .meta({ id: 'AgentRunSummary' });

export const agentRunDetailSchema = agentRunSummarySchema
  .extend({ agent_key: z.string(), input: json, trace: z.array(traceStepSchema) })
  .meta({ id: 'AgentRunDetail' });

export const listRunsInput = agentKeyParam.extend({
  ...historyPageQuery,
  status: z.enum(AGENT_RUN_STATUSES).optional(),
  session_id: z.string().max(64).optional(),
});

export const runsPageSchema = z.object({ runs: z.array(agentRunSummarySchema), pagination: historyPaginationSchema });

export const sessionRowSchema = z
  .object({
    session_id: z.string(),
    user_id: z.string().nullable(),
    turns: z.number().int(),
    status: z.enum(['active', 'needs_input', 'expired']),
    last_activity_at: z.string(),
    created_at: z.string(),
  })
  .meta({ id: 'AgentSession' });

export const transcriptSchema = z
  .object({
    session_id: z.string(),
    turns: z.array(z.object({ role: z.enum(['user', 'assistant']), content: z.string(), run_id: z.string().nullable(), created_at: z.string() })),
  })
  .meta({ id: 'AgentTranscript' });
