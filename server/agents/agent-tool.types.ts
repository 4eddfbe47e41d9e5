// What a tool of an agent run is, and what building the tools needs: shared by the tools of every
// kind (agent-tools.ts, platform-tools.ts) and the loop that calls them (run-agent.ts).
import type { ChatCompletionTool } from 'openai/resources/chat/completions';
import type { EntityManager } from '../../db/orm.js';
import type { AppDeps } from '../deps.js';
import type { RunBudget } from '../llm/run-budget.js';
import type { RunLineage } from '../runs/run-lineage.js';
import type { PlanLimits } from '../tenants/plan-limits.js';
import type { TenantScope } from '../tenants/tenant-scope.js';
import type { AgentRuntimeConfig } from './agent-runtime-config.js';
import type { AgentSettings } from './load-agent-run.js';
import type { ToolsConfig } from './agents.schemas.js';

export interface ToolOutcome {
  output: unknown;
  costUsd?: number;
  promptTokens?: number;
  completionTokens?: number;
  /** The run pauses for the user (ask_user): the question becomes the run's output. */
  askUser?: string;
}

export interface AgentTool {
  name: string;
  kind: 'intent' | 'workflow' | 'knowledge' | 'platform' | 'mcp';
  spec: ChatCompletionTool;
  run(args: Record<string, unknown>, call: { signal: AbortSignal; timeoutMs: number }): Promise<ToolOutcome>;
}

export interface ToolContext {
  em: EntityManager;
  deps: AppDeps;
  scope: TenantScope;
  agent: AgentSettings;
  runId: string;
  userId: string | null;
  config: AgentRuntimeConfig;
  toolsConfig: ToolsConfig;
  budget: RunBudget;
  /** This run's place in a tree of nested runs: what the workflows it starts inherit. */
  lineage: RunLineage;
  limits: PlanLimits;
}

/** A tool that could not be offered (e.g. an MCP server that did not answer), for the trace. */
export interface ToolProblem {
  name: string;
  error: string;
}
