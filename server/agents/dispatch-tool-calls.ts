// Tool dispatch of an agent run: runs the tools one model answer asked for (concurrently), stores
// each as a step, and turns their results into what the model is shown next.
import type { ChatCallResult } from '../llm/llm.types.js';
import type { AgentTool, ToolOutcome } from './agent-tool.types.js';
import { runToolWithTimeout } from './agent-tools.js';
import { observeToolCall } from '../observability/telemetry.js';

/** What one tool result may put in front of the model. */
const TOOL_RESULT_MAX_CHARS = 20_000;

export type ToolCall = ChatCallResult['toolCalls'][number];

export type ToolEvent =
  | { event: 'tool.started'; data: { name: string; input: unknown } }
  | { event: 'tool.completed'; data: { name: string; output: unknown; error: string | null } };

/** A tool call's step row, as the run stores it. */
export interface ToolStep {
  type: 'tool';
  name: string;
  input: unknown;
  output: unknown;
  started: Date;
  latencyMs: number;
  promptTokens?: number;
  completionTokens?: number;
  costUsd?: number;
  error: string | null;
}

export interface CallOutcome {
  call: ToolCall;
  outcome: ToolOutcome | null;
  error: string | null;
}

/** What running the calls needs from the run. */
export interface ToolDispatch {
  tools: Map<string, AgentTool>;
  timeoutMs: number;
  signal?: AbortSignal;
  emit: (event: ToolEvent) => void;
  /** The step index of the next call (taken in the order the model asked, before any runs). */
  nextIndex: () => number;
  /** Stores a call's step at its index. */
  recordStep: (step: ToolStep, at: number) => Promise<void>;
}

/** Runs every call at once; each outcome (or error) is stored as a step before this returns. */
export function dispatchToolCalls(calls: ToolCall[], dispatch: ToolDispatch): Promise<CallOutcome[]> {
  return Promise.all(calls.map((call) => runToolCall(call, dispatch.nextIndex(), dispatch)));
}

export const toolResultText = (value: unknown) => {
  const text = typeof value === 'string' ? value : JSON.stringify(value ?? null);
  return text.length > TOOL_RESULT_MAX_CHARS ? `${text.slice(0, TOOL_RESULT_MAX_CHARS)}… [cut]` : text;
};

function parseArguments(text: string): Record<string, unknown> {
  if (!text.trim()) return {};
  const value = JSON.parse(text) as unknown;
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new Error('the arguments must be a JSON object');
  return value as Record<string, unknown>;
}

const errorText = (err: unknown) => (err instanceof SyntaxError ? `invalid JSON arguments: ${err.message}` : err instanceof Error ? err.message : String(err));

async function runToolCall(call: ToolCall, at: number, dispatch: ToolDispatch): Promise<CallOutcome> {
  const started = new Date();
  const t0 = performance.now();
  let args: Record<string, unknown> = {};
  let outcome: ToolOutcome | null = null;
  let failed: string | null = null;
  const tool = dispatch.tools.get(call.name);
  try {
    args = parseArguments(call.arguments);
  } catch (err) {
    failed = errorText(err);
  }
  dispatch.emit({ event: 'tool.started', data: { name: call.name, input: failed ? call.arguments : args } });
  if (!failed) {
    const ran = await observeToolCall(
      { name: call.name, kind: tool?.kind ?? 'unknown' },
      async (): Promise<{ outcome: ToolOutcome | null; failed: string | null }> => {
        try {
          if (!tool) throw new Error(`there is no tool named "${call.name}"`);
          return { outcome: await runToolWithTimeout(tool, args, dispatch.timeoutMs, dispatch.signal), failed: null };
        } catch (err) {
          return { outcome: null, failed: errorText(err) };
        }
      },
      (result) => result.failed !== null,
    );
    outcome = ran.outcome;
    failed = ran.failed;
  }
  dispatch.emit({ event: 'tool.completed', data: { name: call.name, output: outcome?.output ?? null, error: failed } });
  await dispatch.recordStep(
    { type: 'tool', name: call.name, input: args, output: outcome?.output ?? null, started, latencyMs: performance.now() - t0, promptTokens: outcome?.promptTokens, completionTokens: outcome?.completionTokens, costUsd: outcome?.costUsd, error: failed },
    at,
  );
  return { call, outcome, error: failed };
}
