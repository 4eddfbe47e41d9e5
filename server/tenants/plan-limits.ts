// What one tenant's work may take, by billing plan: every run, expression, mail and nested call is
// checked against these while it runs, so no tenant can stall or exhaust the server for another.
// The operator may change any default per plan with PLAN_LIMITS (JSON, read in config.ts). What a
// plan allows besides (agents, transcription, evaluations and their judge budget) is decided here
// too (allowancesForPlan); how long a plan keeps each kind of history is retention-policy.ts's table.
// A limit that is reached ends the work with the error code listed beside it (LIMIT_CODES).

export const PLAN_NAMES = ['free', 'trial', 'starter', 'pro', 'enterprise'] as const;
export type PlanName = (typeof PLAN_NAMES)[number];

export interface PlanLimits {
  /** Step executions per run: every step, every loop body iteration and every nested loop's iteration. */
  run_steps: number;
  /** Bytes (JSON) of one step's output; a loop's output is the list of its iterations' results. */
  step_output_bytes: number;
  /** Bytes (JSON) of a run's state: its input (its attachments' text apart) and every step output it has stored. */
  run_state_bytes: number;
  /** Bytes (JSON) of a run's input; the text read from its attachments is not counted (it has its own bound, read-attachments.ts). */
  run_input_bytes: number;
  /** Seconds a run may execute without waiting (a wait for a delay, approval, callback or input starts a new span). */
  run_wall_seconds: number;
  /** Depth of nested runs: an agent that runs a workflow that runs an agent ... (the first run is depth 1). */
  nesting_depth: number;
  /** Runs started below one run, all levels together (agent tool calls, ai_agent steps). */
  nested_runs: number;
  /** Milliseconds one expression (CEL) or template may take to evaluate. */
  expression_ms: number;
  /** Largest value an expression or template may build: characters of a string, elements of a list, entries of a map. */
  expression_result_size: number;
  /** Mails a tenant may send per day (UTC), workflow steps and agent tools together; each recipient counts as one mail. */
  mail_per_day: number;
  /** Recipients of one mail. */
  mail_recipients: number;
  /** Whether mail may go to any address; otherwise only to the tenant's own users with a verified e-mail. */
  mail_any_recipient: boolean;
  /** Event subscriptions a tenant may hold. */
  event_subscriptions: number;
  /** Event deliveries a tenant's receivers get per second, all subscriptions together; more wait their turn. */
  event_deliveries_per_second: number;
}

export type LimitName = keyof PlanLimits;

const KiB = 1024;
const MiB = 1024 * KiB;

/**
 * Defaults per plan. For scale: Temporal caps a payload at 2 MB and a history at 50 MB, AWS Step
 * Functions a state at 256 KB, Inngest a step output at 4 MB and a run's state at 32 MB.
 */
export const DEFAULT_PLAN_LIMITS: Readonly<Record<PlanName, Readonly<PlanLimits>>> = {
  free: {
    run_steps: 1_000, step_output_bytes: 256 * KiB, run_state_bytes: 2 * MiB, run_input_bytes: 1 * MiB, run_wall_seconds: 60,
    nesting_depth: 2, nested_runs: 10, expression_ms: 50, expression_result_size: 100_000,
    mail_per_day: 0, mail_recipients: 1, mail_any_recipient: false,
    event_subscriptions: 2, event_deliveries_per_second: 10,
  },
  trial: {
    run_steps: 5_000, step_output_bytes: 1 * MiB, run_state_bytes: 8 * MiB, run_input_bytes: 2 * MiB, run_wall_seconds: 300,
    nesting_depth: 3, nested_runs: 25, expression_ms: 100, expression_result_size: 1_000_000,
    mail_per_day: 50, mail_recipients: 5, mail_any_recipient: false,
    event_subscriptions: 5, event_deliveries_per_second: 20,
  },
  starter: {
    run_steps: 25_000, step_output_bytes: 2 * MiB, run_state_bytes: 16 * MiB, run_input_bytes: 4 * MiB, run_wall_seconds: 900,
    nesting_depth: 4, nested_runs: 100, expression_ms: 100, expression_result_size: 2_000_000,
    mail_per_day: 1_000, mail_recipients: 20, mail_any_recipient: true,
    event_subscriptions: 20, event_deliveries_per_second: 100,
  },
  pro: {
    run_steps: 100_000, step_output_bytes: 4 * MiB, run_state_bytes: 32 * MiB, run_input_bytes: 8 * MiB, run_wall_seconds: 3_600,
    nesting_depth: 5, nested_runs: 250, expression_ms: 200, expression_result_size: 4_000_000,
    mail_per_day: 10_000, mail_recipients: 50, mail_any_recipient: true,
    event_subscriptions: 50, event_deliveries_per_second: 300,
  },
  enterprise: {
    run_steps: 250_000, step_output_bytes: 4 * MiB, run_state_bytes: 64 * MiB, run_input_bytes: 16 * MiB, run_wall_seconds: 3_600,
    nesting_depth: 6, nested_runs: 500, expression_ms: 250, expression_result_size: 8_000_000,
    mail_per_day: 100_000, mail_recipients: 100, mail_any_recipient: true,
    event_subscriptions: 100, event_deliveries_per_second: 1_000,
  },
};

/** The error code a reached limit ends its work with. */
export const LIMIT_CODES: Readonly<Record<LimitName, string>> = {
  run_steps: 'STEP_LIMIT_EXCEEDED',
  step_output_bytes: 'OUTPUT_TOO_LARGE',
  run_state_bytes: 'RUN_STATE_TOO_LARGE',
  run_input_bytes: 'PAYLOAD_TOO_LARGE',
  run_wall_seconds: 'RUN_TIMEOUT',
  nesting_depth: 'NESTING_TOO_DEEP',
  nested_runs: 'NESTED_RUN_LIMIT',
  expression_ms: 'EXPRESSION_LIMIT',
  expression_result_size: 'EXPRESSION_LIMIT',
  mail_per_day: 'MAIL_QUOTA_EXCEEDED',
  mail_recipients: 'MAIL_RECIPIENTS_EXCEEDED',
  mail_any_recipient: 'MAIL_RECIPIENT_NOT_ALLOWED',
  event_subscriptions: 'EVENT_SUBSCRIPTION_LIMIT',
  event_deliveries_per_second: 'EVENT_RATE_LIMITED',
};

/** Operator overrides: `{"trial": {"run_steps": 10000}}` (PLAN_LIMITS). */
export type PlanLimitOverrides = Partial<Record<PlanName, Partial<PlanLimits>>>;

const isPlan = (plan: string): plan is PlanName => (PLAN_NAMES as readonly string[]).includes(plan);

/** The limits of `plan` (an unknown plan gets the free plan's), with the operator's overrides. */
export function limitsForPlan(plan: string, overrides: PlanLimitOverrides | undefined): PlanLimits {
  const name: PlanName = isPlan(plan) ? plan : 'free';
  const own = overrides?.[name];
  return own ? { ...DEFAULT_PLAN_LIMITS[name], ...own } : DEFAULT_PLAN_LIMITS[name];
}

/**
 * What a plan allows besides its limits: agentic tool calling, transcription of images and scanned
 * pages in run attachments (VISION_MODEL or local OCR), and evaluations with their monthly judge
 * budget in USD (null: unlimited; `evals: null`: no evaluations). Kept beside the limits so that one
 * module says what a plan gets; features ask allowancesForPlan, never test plan names themselves.
 */
export interface PlanAllowances {
  agents: boolean;
  attachment_transcription: boolean;
  evals: EvalAllowances | null;
}

/**
 * Evaluations: the monthly judge budget for every judge call (offline and online), the online
 * sampling rules and monitors a tenant may hold, and the default of the tenant's own monthly cap on
 * online judging (a tenant may set its own; online spend counts toward judge_budget_usd as well).
 */
export interface EvalAllowances {
  judge_budget_usd: number | null;
  online_rules: number;
  monitors: number;
  online_judge_budget_usd: number;
}

const PLAN_ALLOWANCES: Readonly<Record<PlanName, Readonly<PlanAllowances>>> = {
  free: { agents: false, attachment_transcription: false, evals: null },
  trial: { agents: true, attachment_transcription: false, evals: { judge_budget_usd: 5, online_rules: 5, monitors: 10, online_judge_budget_usd: 1 } },
  starter: { agents: true, attachment_transcription: true, evals: { judge_budget_usd: 50, online_rules: 20, monitors: 50, online_judge_budget_usd: 10 } },
  pro: { agents: true, attachment_transcription: true, evals: { judge_budget_usd: 500, online_rules: 50, monitors: 100, online_judge_budget_usd: 100 } },
  enterprise: { agents: true, attachment_transcription: true, evals: { judge_budget_usd: null, online_rules: 100, monitors: 200, online_judge_budget_usd: 500 } },
};

/** What `plan` allows (an unknown plan gets the free plan's, as with its limits). */
export function allowancesForPlan(plan: string): PlanAllowances {
  return PLAN_ALLOWANCES[isPlan(plan) ? plan : 'free'];
}

/**
 * A limit was reached. `code` is the documented error code (LIMIT_CODES), `limit` its name and
 * `max` its value for the tenant's plan; `fatal` ends the whole run (a step limit, the run's time,
 * its state), otherwise only the step fails (its on_failure branch may handle it).
 */
export class LimitExceededError extends Error {
  readonly code: string;
  constructor(
    readonly limit: LimitName,
    readonly max: number | boolean,
    message: string,
    readonly fatal = false,
  ) {
    super(message);
    this.name = 'LimitExceededError';
    this.code = LIMIT_CODES[limit];
  }

  /** The run's stored error (and an HTTP error's details). */
  toDetails(): { code: string; limit: LimitName; max: number | boolean; message: string } {
    return { code: this.code, limit: this.limit, max: this.max, message: this.message };
  }
}

/** What each limit bounds, for the limits table of the README and the OpenAPI document. */
const LIMIT_DESCRIPTIONS: Readonly<Record<LimitName, string>> = {
  run_steps: 'step executions per workflow run (every loop iteration counts, nested loops too)',
  step_output_bytes: 'bytes of one step\'s output (a loop\'s list of results included)',
  run_state_bytes: 'bytes a run stores: its input and every step\'s values',
  run_input_bytes: 'bytes of a run\'s JSON input; the text read from its attachments has its own limit (413)',
  run_wall_seconds: 'seconds a run (workflow or agent) executes without waiting; nested runs end by their root\'s deadline',
  nesting_depth: 'depth of runs started by runs (agent -> workflow -> agent ...)',
  nested_runs: 'runs started below one run, all levels together',
  expression_ms: 'milliseconds one CEL expression may run (workflow steps, eval scorers)',
  expression_result_size: 'characters, list elements or map entries one expression or template may build',
  mail_per_day: 'mails a tenant sends per UTC day (workflow steps and agent tools; each recipient counts)',
  mail_recipients: 'recipients of one mail',
  mail_any_recipient: 'mail to any address (no: only to the tenant\'s users with a verified e-mail)',
  event_subscriptions: 'event subscriptions a tenant holds (409 on the next one)',
  event_deliveries_per_second: 'event deliveries per second to a tenant\'s receivers (more wait their turn; never dropped)',
};

const formatLimit = (name: LimitName, value: number | boolean): string => {
  if (typeof value === 'boolean') return value ? 'yes' : 'no';
  if (name.endsWith('_bytes')) return value % MiB === 0 ? `${value / MiB} MiB` : `${value / KiB} KiB`;
  return value.toLocaleString('en-US');
};

/** The limits table (Markdown): one row per limit, its default per plan and its error code. */
export function describePlanLimits(): string {
  const names = Object.keys(LIMIT_DESCRIPTIONS) as LimitName[];
  const rows = names.map((name) => `| \`${name}\` | ${LIMIT_DESCRIPTIONS[name]} | ${PLAN_NAMES.map((plan) => formatLimit(name, DEFAULT_PLAN_LIMITS[plan][name])).join(' | ')} | ${LIMIT_CODES[name]} |`);
  return [`| Limit | What it bounds | ${PLAN_NAMES.join(' | ')} | Error code |`, `|---|---|${PLAN_NAMES.map(() => '---:').join('|')}|---|`, ...rows].join('\n');
}
