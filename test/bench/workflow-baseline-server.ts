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
import { createHash, randomUUID } from 'node:crypto';
import type http from 'node:http';
import pg from 'pg';
import { Webhook } from 'standardwebhooks';
import { sendJson as send, readJsonBody as readJson, serveBaseline } from './lib.js';

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

  const served = await serveBaseline(handle, async () => {
    await pool?.end();
  });
  return { ...served, statements: () => statements };
}

// ---------------------------------------------------------------- the webhooks benchmark's yardstick

// A node:http server that answers signed webhook deliveries into the webhooks benchmark's 3-step
// workflow (trigger, transform {x: trigger.n}, end {ok: true}) by hand, with the guarantees Liya
// gives: the Standard Webhooks signature verified (the same `standardwebhooks` package, over the
// raw body, within its 5-minute window), the webhook-id claimed (a repeat answers the first run and
// starts nothing), the run and its trigger step stored in ONE statement committed synchronously
// before the 202 (an accepted call is on disk), then each of the two other steps stored (row and
// the run's new position, the last one with the run's end) before the next starts, with
// asynchronous commit as Liya's step rows. Same tables, the baseline's own tenant and workflow. No
// routing framework, no lookup (the one workflow and its secret are given), no engine, no queue:
// each accepted call's steps run at once in the request's own async chain; and no recovery (a
// process that died after the 202 would leave its runs running: Liya's owner and heartbeat columns
// and its sweep are what that costs).
export interface WebhookBaselineOptions {
  url: string;
  poolMax: number;
  tenantId: string;
  workflowId: string;
  version: number;
  /** The workflow's whsec_ secret. */
  secret: string;
}

export interface WebhookBaselineServer {
  url: string;
  /** Statements sent to PostgreSQL so far. */
  statements(): number;
  close(): Promise<void>;
}

const STEP_INSERT = `insert into run_steps (id, tenant_id, run_kind, run_id, index, type, name, step_id, status, input, output, prompt_tokens, completion_tokens,
                         cost_usd, latency_ms, error, started_at, completed_at)`;

// The claim, the run (positioned after its trigger) and the trigger's row: one durable statement.
const ACCEPT_SQL = `
with claim as (
  insert into idempotency_keys (tenant_id, scope, key, request_hash, run_id, result, created_at) values ($1, $2, $3, $4, $5, null, now())
  on conflict (tenant_id, scope, key) do nothing
  returning run_id
),
run as (
  insert into workflow_runs (id, tenant_id, workflow_id, version, scope, conversation_id, status, triggered_by, input, next_step_id, steps_done, executions, started_at, updated_at)
  select run_id, $1, $6, $7, 'live', gen_random_uuid(), 'running', 'webhook', $8::jsonb, 'x', 1, 1, now(), now() from claim
  returning id
),
step as (
  ${STEP_INSERT}
  select gen_random_uuid(), $1, 'workflow', id, 0, 'trigger', 't', 't', 'completed', 'null'::jsonb, $8::jsonb, 0, 0, 0, 0, null, now(), now() from run
  returning 1
)
select (select id::text from run) as created, (select count(*) from step)::int as stepped`;

const FIRST_RUN_SQL = 'select run_id::text from idempotency_keys where tenant_id = $1 and scope = $2 and key = $3';

// A step's row and the run's new position (or its end), asynchronous commit.
const STEP_SQL_BASELINE = `
with async_commit as (select set_config('synchronous_commit', 'off', true)),
run as (
  update workflow_runs set next_step_id = $4, steps_done = $3 + 1, executions = $3 + 1, status = $5, output = $6::jsonb, updated_at = now(),
         completed_at = case when $5 = 'completed' then now() else null end
   where id = $2
  returning 1
),
step as (
  ${STEP_INSERT}
  select gen_random_uuid(), $1, 'workflow', $2, $3, $7, $8, $8, 'completed', $9::jsonb, $10::jsonb, 0, 0, 0, 0, null, $11, now() from run
  returning 1
)
select (select count(*) from step) + (select count(*) from async_commit) as written`;

export async function startWebhookBaselineServer(options: WebhookBaselineOptions): Promise<WebhookBaselineServer> {
  const pool = new pg.Pool({ connectionString: options.url, max: options.poolMax });
  pool.on('error', () => undefined);
  const verifier = new Webhook(options.secret);
  const scope = `webhook:${options.workflowId}`;
  let statements = 0;
  const query = async <T extends pg.QueryResultRow>(name: string, text: string, values: unknown[]) => {
    statements++;
    return (await pool.query<T>({ name, text, values })).rows;
  };

  /** The two steps after the trigger, each stored before the next starts. */
  async function runSteps(tenantId: string, runId: string, input: Record<string, unknown>) {
    let started = new Date();
    const x = { x: input.n };
    await query('bench_webhook_baseline_step', STEP_SQL_BASELINE, [tenantId, runId, 1, 'done', 'running', null, 'action', 'x', JSON.stringify({ output: x }), JSON.stringify(x), started]);
    started = new Date();
    const done = { ok: true };
    await query('bench_webhook_baseline_step', STEP_SQL_BASELINE, [tenantId, runId, 2, null, 'completed', JSON.stringify(done), 'end', 'done', JSON.stringify({ output: done }), JSON.stringify(done), started]);
  }

  async function handle(req: http.IncomingMessage, res: http.ServerResponse) {
    if (req.method !== 'POST' || !(req.url ?? '').startsWith('/webhooks/')) return send(res, 404, { success: false });
    const headers: Record<string, string> = {};
    for (const name of ['webhook-id', 'webhook-timestamp', 'webhook-signature']) {
      const value = req.headers[name];
      if (typeof value !== 'string') return send(res, 401, { success: false });
      headers[name] = value;
    }
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const raw = Buffer.concat(chunks);
    let input: unknown;
    try {
      input = verifier.verify(raw, headers);
    } catch {
      return send(res, 401, { success: false });
    }
    if (!input || typeof input !== 'object' || Array.isArray(input)) return send(res, 400, { success: false });
    const runId = randomUUID();
    const key = headers['webhook-id'].slice(0, 255);
    const requestHash = createHash('sha256').update(raw).digest('hex');
    const [accepted] = await query<{ created: string | null }>('bench_webhook_baseline_accept', ACCEPT_SQL, [
      options.tenantId, scope, key, requestHash, runId, options.workflowId, options.version, raw.toString('utf8'),
    ]);
    if (!accepted.created) {
      const [first] = await query<{ run_id: string }>('bench_webhook_baseline_first', FIRST_RUN_SQL, [options.tenantId, scope, key]);
      return send(res, 202, { success: true, data: { run_id: first?.run_id ?? null, duplicate: true } });
    }
    send(res, 202, { success: true, data: { run_id: runId } });
    // Not awaited by the answer: a failure is a run left running, which the bench's checks report.
    runSteps(options.tenantId, runId, input as Record<string, unknown>).catch(() => undefined);
  }

  const served = await serveBaseline(handle, async () => {
    await pool.end();
  });
  return { ...served, statements: () => statements };
}
