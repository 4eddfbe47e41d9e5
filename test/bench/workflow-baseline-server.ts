// The workflows benchmark's yardstick: a node:http server whose handler does by hand, in plain
// JavaScript, the five steps of the benchmark's workflow (trigger, condition, transform, log, end)
// and answers the same body Liya's POST /v1/workflows/{key}/run answers (run_id, conversation_id,
// status, output, and a five-entry trace with each step's input, output and times). No auth, no
// routing framework, no validation, no expression language, no templates, no engine.
//
// Two modes:
//  - in memory: nothing is stored (what the five steps cost as a function behind HTTP);
//  - with rows (`database` set): before answering, the run row (completed) and its five run_steps
//    rows are written to the same tables Liya writes (workflow_runs and run_steps, run_kind
//    'workflow', same indexes, same foreign keys), under a tenant and workflow of the baseline's
//    own, by plain `pg` in ONE statement per run (a CTE: the run insert and a five-row VALUES
//    insert), one transaction, committed synchronously (the default): once the answer is sent the
//    whole run is on disk. That is at least as durable as Liya at the moment it answers (its run
//    row is committed synchronously, its step rows asynchronously). The statement is prepared once
//    per connection, as Liya's are.
//
// The `log` step: Liya runs with LOG_LEVEL=silent in the bench, so its log call is a no-op; the
// baseline builds the same message and does not print it either.
import { randomUUID } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import pg from 'pg';
import { sendJson as send, readJsonBody as readJson } from './lib.js';

export interface WorkflowBaselineOptions {
  /** Write each run's rows (one statement per run); absent: in memory only. */
  database?: {
    url: string;
    poolMax: number;
    /** The baseline's own tenant and deployed workflow (foreign keys of workflow_runs). */
    tenantId: string;
    workflowId: string;
    version: number;
  };
}

export interface WorkflowBaselineServer {
  url: string;
  /** Statements sent to PostgreSQL so far (0 in memory). */
  statements(): number;
  close(): Promise<void>;
}

interface Trace {
  step_id: string;
  step_type: string;
  name: string;
  status: string;
  input: unknown;
  output: unknown;
  error: string | null;
  started_at: string;
  completed_at: string;
}

const RUN_PATH = /^\/v1\/workflows\/[^/]+\/run$/;
const STEP_COLUMNS = 10;

// The run row and the five step rows in one statement: one round trip, one transaction.
const INSERT_SQL = `
with run as (
  insert into workflow_runs (id, tenant_id, workflow_id, version, definition, scope, conversation_id, status, triggered_by, input, output,
                             next_step_id, steps_done, error, started_at, updated_at, completed_at)
  values ($1, $2, $3, $4, null, 'live', $5, 'completed', 'api', $6::jsonb, $7::jsonb, null, 5, null, $8, now(), now())
  returning 1
),
steps as (
  insert into run_steps (id, tenant_id, run_kind, run_id, index, type, name, step_id, status, input, output, prompt_tokens, completion_tokens,
                         cost_usd, latency_ms, error, started_at, completed_at)
  values ${Array.from({ length: 5 }, (_, i) => {
    const p = (k: number) => `$${9 + i * STEP_COLUMNS + k}`;
    return `(gen_random_uuid(), $2, 'workflow', $1, ${p(0)}::int, ${p(1)}, ${p(2)}, ${p(3)}, ${p(4)}, ${p(5)}::jsonb, ${p(6)}::jsonb, 0, 0, 0, ${p(7)}::int, null, ${p(8)}::timestamptz, ${p(9)}::timestamptz)`;
  }).join(',\n         ')}
  returning 1
)
select (select count(*) from run) + (select count(*) from steps) as written`;

export async function startWorkflowBaselineServer(options: WorkflowBaselineOptions = {}): Promise<WorkflowBaselineServer> {
  const db = options.database;
  const pool = db ? new pg.Pool({ connectionString: db.url, max: db.poolMax }) : null;
  pool?.on('error', () => undefined);
  let statements = 0;

  /** The five steps, by hand. Throws (HTTP 400) when the condition cannot be evaluated, as Liya's run would fail. */
  function runSteps(runId: string, conversationId: string, input: Record<string, unknown>) {
    const trace: Trace[] = [];
    const step = (step_id: string, step_type: string, stepInput: unknown, body: () => unknown) => {
      const started = new Date();
      const t0 = performance.now();
      const output = body();
      const completed = new Date();
      trace.push({ step_id, step_type, name: step_id, status: 'completed', input: stepInput, output, error: null, started_at: started.toISOString(), completed_at: completed.toISOString() });
      return { output, latencyMs: performance.now() - t0 };
    };
    // trigger: the input as it came
    step('start', 'trigger', null, () => input);
    // condition: trigger.amount > 100 (a number, as CEL requires)
    const amount = input.amount;
    if (typeof amount !== 'number') throw Object.assign(new Error('trigger.amount is not a number'), { status: 400 });
    const big = amount > 100;
    step('check', 'condition', { expression: 'trigger.amount > 100' }, () => ({ result: big }));
    // transform: {amount, big}
    const shaped = { amount, big };
    step('shape', 'action', { output: shaped }, () => ({ amount, big }));
    // log: the message (not printed: Liya's logger is silent in the bench)
    const message = `run ${runId}`;
    step('note', 'action', { message }, () => ({ message }));
    // end: the shape step's output is the run's output
    const { output } = step('done', 'end', { output: shaped }, () => shaped);
    return { run_id: runId, conversation_id: conversationId, status: 'completed', output, trace };
  }

  async function store(run: ReturnType<typeof runSteps>, input: Record<string, unknown>, startedAt: Date) {
    const params: unknown[] = [run.run_id, db!.tenantId, db!.workflowId, db!.version, run.conversation_id, JSON.stringify(input), JSON.stringify(run.output), startedAt];
    run.trace.forEach((s, index) => {
      params.push(index, s.step_type, s.name, s.step_id, s.status, JSON.stringify(s.input), JSON.stringify(s.output), Date.parse(s.completed_at) - Date.parse(s.started_at), s.started_at, s.completed_at);
    });
    statements++;
    const { rows } = await pool!.query<{ written: string }>({ name: 'bench_workflow_baseline_run', text: INSERT_SQL, values: params });
    if (Number(rows[0]?.written) !== 6) throw new Error(`baseline: wrote ${rows[0]?.written} rows, expected 6`);
  }

  async function handle(req: http.IncomingMessage, res: http.ServerResponse) {
    if (req.method !== 'POST' || !RUN_PATH.test((req.url ?? '/').split('?')[0])) return send(res, 404, { success: false });
    const startedAt = new Date();
    const body = await readJson(req);
    const input = body?.input ?? {};
    if (!input || typeof input !== 'object' || Array.isArray(input)) return send(res, 400, { success: false });
    let run: ReturnType<typeof runSteps>;
    try {
      run = runSteps(randomUUID(), randomUUID(), input as Record<string, unknown>);
    } catch (err) {
      return send(res, 400, { success: false, error: { message: err instanceof Error ? err.message : String(err) } });
    }
    if (pool) await store(run, input as Record<string, unknown>, startedAt);
    send(res, 200, { success: true, data: run });
  }

  const server = http.createServer((req, res) => {
    handle(req, res).catch(() => {
      if (!res.headersSent) send(res, 500, { success: false });
      else res.destroy();
    });
  });
  server.keepAliveTimeout = 10_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}`,
    statements: () => statements,
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await pool?.end();
    },
  };
}
