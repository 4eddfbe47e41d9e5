// The tools one agent run offers the model: its intents, knowledge search, the platform tools it
// enables and the tools of its MCP servers, each with a JSON Schema for its arguments and a
// function that runs it. Names follow the providers' rule (^[a-zA-Z0-9_-]{1,64}$).
import type { ChatCompletionTool } from 'openai/resources/chat/completions';
import { AppError } from '../errors.js';
import type { IntentDefinition } from '../intents/intent-definition.js';
import { resolveIntent } from '../intents/resolve-intent.js';
import { runIntent } from '../intents/run-intent.service.js';
import { searchKnowledge } from '../knowledge/knowledge.service.js';
import { enterNestedRun } from '../runs/run-lineage.js';
import { parseIntentRef } from '../intents/intent-ref.js';
import type { AgentTool, ToolContext, ToolOutcome, ToolProblem } from './agent-tool.types.js';
import { revealMcpHeaders } from './mcp-headers.js';
import { buildPlatformTools } from './platform-tools.js';
import { findCustomIntentKeys } from '../intents/intent-records.js';

const MAX_NAME = 64;

/** `hiring/resume-analysis` -> `hiring__resume-analysis`, within the providers' name rule. */
export function toolName(...parts: string[]): string {
  return parts.join('__').replace(/[^a-zA-Z0-9_-]/g, '_').slice(0, MAX_NAME);
}

const functionTool = (name: string, description: string, parameters: Record<string, unknown>): ChatCompletionTool => ({
  type: 'function',
  function: { name, description: description.slice(0, 1024), parameters },
});

/** The intent's input schema without user_id, which the platform fills in. */
function intentParameters(intent: IntentDefinition): Record<string, unknown> {
  const schema = (intent.inputSchema ?? { type: 'object', additionalProperties: true }) as Record<string, unknown>;
  const properties = { ...((schema.properties as Record<string, unknown> | undefined) ?? {}) };
  delete properties.user_id;
  const required = ((schema.required as string[] | undefined) ?? []).filter((f) => f !== 'user_id');
  const { description: _d, ...rest } = schema;
  return { ...rest, type: 'object', properties, ...(required.length ? { required } : { required: [] }) };
}

async function buildIntentTools(ctx: ToolContext, problems: ToolProblem[]): Promise<AgentTool[]> {
  const tools: AgentTool[] = [];
  for (const ref of ctx.agent.intentIds) {
    const parsed = parseIntentRef(ref);
    let intent: IntentDefinition;
    try {
      if (!parsed) throw new Error('not an intent reference');
      let domain: string;
      let key: string;
      if (parsed.kind === 'id') {
        const row = await findCustomIntentKeys(ctx.em, ctx.scope.tenantId, parsed.id);
        if (!row) throw new Error('the intent no longer exists');
        domain = row.domain_key;
        key = row.intent_key;
      } else {
        domain = parsed.domain;
        key = parsed.intent;
      }
      intent = await resolveIntent(ctx.em, ctx.scope.tenant, domain, key);
    } catch (err) {
      problems.push({ name: `intent:${ref}`, error: (err as Error).message });
      continue;
    }
    const name = toolName(intent.domain, intent.key);
    tools.push({
      name,
      kind: 'intent',
      spec: functionTool(name, `${intent.displayName}: ${intent.description ?? ''}`, intentParameters(intent)),
      run: async (args) => {
        const result = await runIntent(
          ctx.em.fork(),
          ctx.deps,
          ctx.scope,
          intent.domain,
          intent.key,
          { input: { ...args, user_id: ctx.userId ?? `agent:${ctx.agent.agentKey}` } } as never,
          { budget: ctx.budget },
        );
        return { output: result.data.output, costUsd: result.metadata.cost_usd, promptTokens: result.metadata.tokens_used, completionTokens: 0 };
      },
    });
  }
  return tools;
}

const KNOWLEDGE_TEXT_MAX = 1500;

function buildKnowledgeTool(ctx: ToolContext): AgentTool[] {
  const domains = ctx.agent.knowledgeDomainKeys;
  if (!domains.length) return [];
  return [
    {
      name: 'knowledge_search',
      kind: 'knowledge',
      spec: functionTool('knowledge_search', `Searches the knowledge base (${domains.join(', ')}) and returns the most relevant passages.`, {
        type: 'object',
        properties: {
          query: { type: 'string', description: 'What to look for' },
          domain: { type: 'string', enum: domains, description: 'Search only this domain (default: all)' },
          top_k: { type: 'integer', minimum: 1, maximum: 10, description: 'Passages to return (default 5)' },
        },
        required: ['query'],
      }),
      run: async (args) => {
        const query = typeof args.query === 'string' ? args.query : '';
        const only = typeof args.domain === 'string' && domains.includes(args.domain) ? [args.domain] : domains;
        const topK = Number.isInteger(args.top_k) ? Math.min(10, Math.max(1, args.top_k as number)) : 5;
        const found: { domain: string; document_name: string; text: string; score: number }[] = [];
        const errors: string[] = [];
        for (const domainKey of only) {
          try {
            const { results } = await searchKnowledge(ctx.em.fork(), ctx.deps, ctx.scope.tenantId, { domainKey, query, topK });
            for (const r of results) found.push({ domain: domainKey, document_name: r.document_name, text: r.text.slice(0, KNOWLEDGE_TEXT_MAX), score: r.score });
          } catch (err) {
            errors.push(`${domainKey}: ${(err as Error).message}`);
          }
        }
        if (!found.length && errors.length === only.length) throw new Error(errors.join('; '));
        return { output: { results: found.sort((a, b) => b.score - a.score).slice(0, topK) } };
      },
    },
  ];
}

/**
 * Each deployed, active workflow of `workflow_ids` as a tool: its arguments are the run's input,
 * and the call is a synchronous run (recorded like any other run of the workflow).
 */
async function buildWorkflowTools(ctx: ToolContext, problems: ToolProblem[]): Promise<AgentTool[]> {
  if (!ctx.agent.workflowIds.length) return [];
  // Through the port: the workflow engine itself runs agents (ai_agent steps).
  const workflows = ctx.deps.runs.workflows;
  const tools: AgentTool[] = [];
  for (const ref of ctx.agent.workflowIds) {
    let workflow;
    try {
      workflow = await workflows.findRunnable(ctx.em, ctx.scope.tenantId, ref);
    } catch (err) {
      problems.push({ name: `workflow:${ref}`, error: (err as Error).message });
      continue;
    }
    const name = toolName('workflow', workflow.key);
    const key = workflow.key;
    tools.push({
      name,
      kind: 'workflow',
      spec: functionTool(name, `Runs the workflow "${workflow.name}"${workflow.description ? `: ${workflow.description}` : ''}. The arguments are its input.`, {
        type: 'object',
        additionalProperties: true,
      }),
      run: async (args, call) => {
        // One level deeper, refused past the plan's nesting; the tool call's time limit cancels the run.
        const lineage = enterNestedRun(ctx.lineage, ctx.limits, `the workflow "${key}"`, { signal: call.signal });
        const result = await workflows.runNested(ctx.em.fork(), ctx.scope, key, args, lineage);
        if (result.status === 'failed') throw new Error(`the workflow run ${result.run_id} failed`);
        return { output: { run_id: result.run_id, status: result.status, output: result.output } };
      },
    });
  }
  return tools;
}

async function buildMcpTools(ctx: ToolContext, problems: ToolProblem[]): Promise<AgentTool[]> {
  const tools: AgentTool[] = [];
  for (const server of ctx.toolsConfig.mcp_servers ?? []) {
    const headers = await revealMcpHeaders(ctx.em, ctx.deps, ctx.scope.tenantId, ctx.agent.agentKey, server);
    // Keyed by tenant in the pool: another tenant's agent with this very URL and headers gets its own client.
    const connection = { ...server, headers, tenantId: ctx.scope.tenantId };
    let listed;
    try {
      listed = await ctx.deps.mcp.listTools(connection);
    } catch (err) {
      problems.push({ name: `mcp:${server.name}`, error: (err as Error).message });
      continue;
    }
    for (const tool of listed) {
      const name = toolName(server.name, tool.name);
      tools.push({
        name,
        kind: 'mcp',
        spec: functionTool(name, tool.description ?? `${tool.name} (MCP server ${server.name})`, { type: 'object', ...tool.inputSchema }),
        run: async (args, call) => {
          const result = await ctx.deps.mcp.callTool(connection, tool.name, args, { timeoutMs: server.timeout_ms ?? call.timeoutMs, signal: call.signal });
          if (result.isError) throw new Error(result.text || `the MCP tool ${tool.name} reported an error`);
          return { output: result.structured ?? result.text };
        },
      });
    }
  }
  return tools;
}

const matches = (patterns: string[], name: string) => patterns.some((p) => (p.endsWith('*') ? name.startsWith(p.slice(0, -1)) : p === name));

/** Every tool the run offers, after the permission policy; names made unique. */
export async function buildAgentTools(ctx: ToolContext): Promise<{ tools: AgentTool[]; problems: ToolProblem[] }> {
  const problems: ToolProblem[] = [];
  const all = [
    ...(await buildIntentTools(ctx, problems)),
    ...(await buildWorkflowTools(ctx, problems)),
    ...buildKnowledgeTool(ctx),
    ...(await buildPlatformTools(ctx)),
    ...(await buildMcpTools(ctx, problems)),
  ];
  const policy = ctx.toolsConfig.permission_policy;
  const seen = new Set<string>();
  const tools: AgentTool[] = [];
  for (const tool of all) {
    if (policy?.allow && !matches(policy.allow, tool.name)) continue;
    if (policy?.deny && matches(policy.deny, tool.name)) continue;
    let name = tool.name;
    for (let n = 2; seen.has(name); n++) name = `${tool.name.slice(0, MAX_NAME - 4)}_${n}`;
    seen.add(name);
    tools.push(name === tool.name ? tool : { ...tool, name, spec: functionTool(name, tool.spec.type === 'function' ? (tool.spec.function.description ?? '') : '', tool.spec.type === 'function' ? (tool.spec.function.parameters ?? {}) : {}) });
  }
  return { tools, problems };
}

/** Runs a tool within its time limit; a late answer is ignored. */
export async function runToolWithTimeout(tool: AgentTool, args: Record<string, unknown>, timeoutMs: number, parent: AbortSignal | undefined): Promise<ToolOutcome> {
  const controller = new AbortController();
  const onAbort = () => controller.abort(parent?.reason);
  parent?.addEventListener('abort', onAbort, { once: true });
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      tool.run(args, { signal: controller.signal, timeoutMs }),
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => {
          controller.abort(new Error('timeout'));
          reject(new AppError('REQUEST_TIMEOUT', `The tool ${tool.name} did not answer within ${timeoutMs} ms`));
        }, timeoutMs);
      }),
    ]);
  } finally {
    clearTimeout(timer);
    parent?.removeEventListener('abort', onAbort);
  }
}
