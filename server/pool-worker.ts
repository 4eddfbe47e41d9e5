// Worker-thread side of the shared pool (server/common/worker-pool.ts): every task contract, by
// name. It sits beside boot.ts because, like it, it wires features together; the contracts hold the
// functions, the same ones a caller runs inline for small inputs.
import type { PoolMessage, PoolTask } from './common/worker-pool.js';
import { compareStatisticsTask, compareUnpairedTask } from './evals/compare-statistics.js';
import { scanTask } from './guardrails/scan-task.js';

const tasks = new Map<string, PoolTask<never, unknown>>([scanTask, compareStatisticsTask, compareUnpairedTask].map((task) => [task.name, task as PoolTask<never, unknown>]));

export default function runPoolMessage(message: PoolMessage): unknown {
  const task = tasks.get(message.name);
  if (!task) throw new Error(`no pool task named ${message.name}`);
  return task.run(message.input as never);
}
