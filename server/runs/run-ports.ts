// Runs start runs: an agent's workflow tool runs a workflow, a workflow's ai_agent step runs an
// agent. Neither feature imports the other: each calls the other through the port declared here,
// and boot.ts wires the implementations (workflows/workflow-run-port.ts, agents/agent-run-port.ts).
import type { EntityManager } from '../../db/orm.js';
import type { TenantScope } from '../tenants/tenant-scope.js';
import type { RunLineage } from './run-lineage.js';

/** A deployed, active workflow an agent may offer as a tool. */
export interface RunnableWorkflow {
  key: string;
  name: string;
  description: string | null;
}

export interface WorkflowRunPort {
  /** The deployed, active workflow `ref` (id or key) names; throws (with a message for the trace) when it cannot run. */
  findRunnable(em: EntityManager, tenantId: string, ref: string): Promise<RunnableWorkflow>;
  /** Runs it synchronously, one level below the run of `lineage` (its depth, budget, deadline and cancellation). */
  runNested(em: EntityManager, scope: TenantScope, key: string, input: Record<string, unknown>, lineage: RunLineage): Promise<{ run_id: string; status: string; output: unknown }>;
}

export interface NestedAgentRequest {
  agentKey: string;
  message: string;
  userId: string;
  /** Continues this agent session (the answer to the agent's question). */
  sessionId: string | null;
}

export interface NestedAgentResult {
  run_id: string;
  session_id: string;
  status: string;
  output: string;
  total_cost: number;
}

export interface AgentRunPort {
  /** Runs the active agent once, one level below the run of `lineage`. */
  runNested(em: EntityManager, scope: TenantScope, request: NestedAgentRequest, lineage: RunLineage): Promise<NestedAgentResult>;
}

/** The ports, as AppDeps carries them. */
export interface RunPorts {
  workflows: WorkflowRunPort;
  agents: AgentRunPort;
}

/**
 * The runs a process with a job runner accepted and executes itself, as AppDeps carries them: the
 * workflow engine defines the run (workflows/engine/run-types.ts LocalRuns) and implements the queue
 * (workflows/local-runs.ts); the process only holds it.
 */
export interface LocalRunQueuePort<Run = unknown> {
  /** Whether a new run may be taken (otherwise it gets a job). */
  hasRoom(): boolean;
  /** A run written owned by this process, committed: executed when a slot is free. */
  push(run: Run): void;
  /** Gives runs to the job runner, trying until the database takes it. */
  handOver(runs: Run[]): void;
}
