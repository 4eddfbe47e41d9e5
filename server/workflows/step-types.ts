// The vocabulary of workflow definitions: step types, trigger subtypes, the action catalog, and the
// shape of each step's config. Config schemas check one step in isolation; what spans steps (ids that
// must exist, the graph, whether an expression compiles) is validate-definition.ts's job.
// Config objects are z.object, not strict: an unknown key is dropped when the step is saved, as at
// the top level of a request body, so a client may send settings a newer or older release knows.
import { z } from 'zod';
import { parseRecipients } from '../mail/mail-recipients.js';
import { hasTemplate } from './expressions.js';

export const STEP_TYPES = ['trigger', 'action', 'condition', 'switch', 'delay', 'loop', 'ai_intent', 'ai_agent', 'approval', 'end'] as const;
export type StepType = (typeof STEP_TYPES)[number];

export const TRIGGER_SUBTYPES = ['manual', 'webhook', 'schedule', 'event'] as const;
export type TriggerSubtype = (typeof TRIGGER_SUBTYPES)[number];

/** A trigger without config.trigger_subtype (or without config) is started by a run call. */
export const DEFAULT_TRIGGER_SUBTYPE: TriggerSubtype = 'manual';

export const ACTION_IDS = ['http_request', 'set_state', 'get_state', 'transform', 'wait_for_callback', 'send_email', 'log'] as const;
export type ActionId = (typeof ACTION_IDS)[number];

export const HTTP_METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'HEAD'] as const;

/** Client-chosen step ids of this shape are kept, so expressions can say `steps.score.output.value`. */
export const STEP_ID_PATTERN = /^[A-Za-z][A-Za-z0-9_]{0,63}$/;

/** `loop.max_iterations` when absent. */
export const DEFAULT_LOOP_MAX_ITERATIONS = 100;

export interface StepDef {
  /** Unique within the workflow. */
  id: string;
  step_type: StepType;
  name: string | null;
  /** Required when step_type is 'action', null otherwise. */
  action_id: string | null;
  config: Record<string, unknown>;
  position_x: number | null;
  position_y: number | null;
  /** Integer; a step without on_success goes to the next step by step_order. */
  step_order: number;
  guidance: string | null;
  on_success_step_id: string | null;
  on_failure_step_id: string | null;
}

// ---- Field shapes -----------------------------------------------------------------------------

const YEAR_SECONDS = 31_536_000;
const KEY_PATTERN = /^[a-z0-9_-]+$/; // the shape of agent, domain and intent keys elsewhere in the API
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

const text = (max: number) => z.string().trim().min(1).max(max);
const isRecipientList = (value: string) => {
  try {
    return parseRecipients(value).length > 0;
  } catch {
    return false;
  }
};
const key = text(100).regex(KEY_PATTERN, 'use lower-case letters, digits, - and _');
/** A step id a config refers to (existence is checked with the whole definition). */
const stepRef = (description: string) => text(100).describe(description);
/** A CEL expression (compiled with the whole definition, so the error can name the step). */
const expression = (description: string) => text(4000).describe(description);
/** Free-form JSON whose strings may hold templates; present, though it may be null. */
const templateValue = (description: string) =>
  z
    .unknown()
    .refine((v) => v !== undefined, 'is required')
    .describe(description);
const templateObject = (description: string) => z.record(z.string(), z.unknown()).describe(description);
const seconds = (max: number, description: string) => z.number().int().min(1).max(max).describe(description);

const isHttpUrl = (value: string) => {
  try {
    const url = new URL(value);
    return url.protocol === 'http:' || url.protocol === 'https:';
  } catch {
    return false;
  }
};
const isTimeZone = (value: string) => {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: value });
    return true;
  } catch {
    return false;
  }
};

// Cron: 5 fields (minute hour day-of-month month day-of-week) or 6 (seconds first). Each field is a
// comma list of `*`, `?` (day fields), `n`, `n-m`, with an optional `/step`; months and weekdays may
// be English abbreviations. Ranges are checked per field; Quartz extras (L, W, #) are not accepted.
const CRON_FIELDS = [
  { name: 'second', min: 0, max: 59 },
  { name: 'minute', min: 0, max: 59 },
  { name: 'hour', min: 0, max: 23 },
  { name: 'day of month', min: 1, max: 31, any: true },
  { name: 'month', min: 1, max: 12, names: ['jan', 'feb', 'mar', 'apr', 'may', 'jun', 'jul', 'aug', 'sep', 'oct', 'nov', 'dec'], base: 1 },
  { name: 'day of week', min: 0, max: 7, any: true, names: ['sun', 'mon', 'tue', 'wed', 'thu', 'fri', 'sat'], base: 0 },
];
const CRON_ITEM = /^(\*|\?|[a-z0-9]+(?:-[a-z0-9]+)?)(?:\/(\d+))?$/;

/** Why `expression` is not a usable cron expression; null when it is. */
export function checkCron(expression: string): string | null {
  const parts = expression.trim().toLowerCase().split(/\s+/);
  if (parts.length !== 5 && parts.length !== 6) return 'cron needs 5 fields (minute hour day month weekday) or 6 (seconds first)';
  const fields = parts.length === 6 ? CRON_FIELDS : CRON_FIELDS.slice(1);
  for (const [i, part] of parts.entries()) {
    const field = fields[i];
    const value = (token: string) => {
      const named = field.names?.indexOf(token) ?? -1;
      if (named >= 0) return named + (field.base ?? 0);
      return /^\d+$/.test(token) ? Number(token) : NaN;
    };
    for (const item of part.split(',')) {
      const match = CRON_ITEM.exec(item);
      const bad = `cron ${field.name} field "${part}" is not valid (${field.min}-${field.max})`;
      if (!match) return bad;
      const [, range, step] = match;
      if (step !== undefined && (Number(step) < 1 || Number(step) > field.max)) return bad;
      if (range === '?' && !field.any) return bad;
      if (range === '*' || range === '?') continue;
      const bounds = range.split('-').map(value);
      if (bounds.some((n) => !(n >= field.min && n <= field.max))) return bad;
      if (bounds.length === 2 && bounds[0] > bounds[1]) return bad;
    }
  }
  return null;
}

// ---- Action configs ---------------------------------------------------------------------------

const actionConfigSchemas = {
  http_request: z.object({
    method: z.enum(HTTP_METHODS).describe('HTTP method'),
    url: z
      .string()
      .max(8192)
      .refine((v) => hasTemplate(v) || isHttpUrl(v), 'must be an http(s) URL or contain a {{template}}')
      .describe('http(s) URL; may contain {{templates}}'),
    headers: z
      .record(z.string().regex(HEADER_NAME, 'not a valid header name'), z.string().max(8192))
      .refine((h) => Object.keys(h).length <= 50, 'at most 50 headers')
      .optional()
      .describe('Request headers; values may contain {{templates}}'),
    body: templateValue('Request body: a string or JSON, sent as JSON unless a string').optional(),
    timeout_ms: z.number().int().min(100).max(60_000).optional().describe('Request timeout in milliseconds (100-60000)'),
  }),
  set_state: z.object({
    key: text(200).describe('State key; may contain {{templates}}'),
    value: templateValue('Value to store: any JSON, strings may contain {{templates}}'),
    ttl_seconds: seconds(YEAR_SECONDS, 'Seconds until the value expires (absent: never)').optional(),
  }),
  get_state: z.object({ key: text(200).describe('State key; may contain {{templates}}') }),
  transform: z.object({ output: templateValue('The step output: any JSON, strings may contain {{templates}}') }),
  wait_for_callback: z.object({
    timeout_seconds: seconds(YEAR_SECONDS, 'Seconds to wait for a POST to {{run.callback_url}} before the step fails').optional(),
  }),
  send_email: z.object({
    to: z
      .string()
      .max(2000)
      .refine(
        (v) => hasTemplate(v) || isRecipientList(v),
        'must be e-mail addresses (comma separated) or contain a {{template}}',
      )
      .describe('Recipients, comma separated (`Name <address>` allowed); may contain {{templates}}, which may give a list'),
    subject: text(998).describe('Subject; may contain {{templates}}'),
    body: text(100_000).describe('Plain-text body; may contain {{templates}}'),
  }),
  log: z.object({ message: text(10_000).describe('Message written to the run log; may contain {{templates}}') }),
} satisfies Record<ActionId, z.ZodType>;

export interface ActionCatalogEntry {
  /** One of {@link ACTION_IDS} (typed string, so lookups by a stored action_id need no cast). */
  id: string;
  name: string;
  description: string;
  /** JSON Schema (draft 2020-12) of the action's config. */
  config_schema: Record<string, unknown>;
}

const ACTION_TEXT: Record<ActionId, { name: string; description: string }> = {
  http_request: {
    name: 'HTTP request',
    description: 'Calls an http(s) URL. Output: {status, headers, body (parsed when JSON), truncated}; a status of 400 or more fails the step.',
  },
  set_state: { name: 'Set state', description: 'Stores a value under a key of the workflow state, optionally expiring. Output: {key, value}.' },
  get_state: { name: 'Get state', description: 'Reads a key of the workflow state. Output: {key, value, found}.' },
  transform: { name: 'Transform', description: 'Builds a value from templates. Output: that value.' },
  wait_for_callback: { name: 'Wait for callback', description: 'Pauses the run until a POST reaches {{run.callback_url}}. Output: the posted body.' },
  send_email: { name: 'Send e-mail', description: 'Queues a plain-text e-mail within the plan\'s mail limits. Output: {queued, to, recipients}.' },
  log: { name: 'Log', description: 'Writes a message to the run log. Output: {message}.' },
};

/** Served by `GET /v1/workflows/actions`. */
export const ACTION_CATALOG: ActionCatalogEntry[] = ACTION_IDS.map((id) => ({
  id,
  ...ACTION_TEXT[id],
  // Refinements (URL or template, cron, ...) are not expressible in JSON Schema; they are checked at save.
  config_schema: z.toJSONSchema(actionConfigSchemas[id], { io: 'input', unrepresentable: 'any' }) as Record<string, unknown>,
}));

// ---- Step configs -----------------------------------------------------------------------------

const triggerConfig = z
  .object({
    trigger_subtype: z.enum(TRIGGER_SUBTYPES).optional().describe(`How runs start (absent: ${DEFAULT_TRIGGER_SUBTYPE})`),
    cron: z.string().max(200).optional(),
    timezone: z.string().max(100).optional(),
    event_name: text(200).optional(),
  })
  .superRefine((config, ctx) => {
    const subtype = config.trigger_subtype ?? DEFAULT_TRIGGER_SUBTYPE;
    const onlyFor = (field: 'cron' | 'timezone' | 'event_name', only: TriggerSubtype) => {
      if (config[field] !== undefined && subtype !== only) {
        ctx.addIssue({ code: 'custom', path: [field], message: `only for ${only} triggers` });
      }
    };
    onlyFor('cron', 'schedule');
    onlyFor('timezone', 'schedule');
    onlyFor('event_name', 'event');
    if (subtype === 'schedule') {
      const problem = config.cron === undefined ? 'is required for schedule triggers' : checkCron(config.cron);
      if (problem) ctx.addIssue({ code: 'custom', path: ['cron'], message: problem });
      if (config.timezone !== undefined && !isTimeZone(config.timezone)) {
        ctx.addIssue({ code: 'custom', path: ['timezone'], message: 'not an IANA time zone (e.g. Europe/Berlin)' });
      }
    }
    if (subtype === 'event' && config.event_name === undefined) {
      ctx.addIssue({ code: 'custom', path: ['event_name'], message: 'is required for event triggers' });
    }
  });

const isoDateTime = z.iso.datetime({ offset: true });
const switchCaseValue = z.union([z.string().max(1000), z.number(), z.boolean(), z.null()]);

const stepConfigSchemas = {
  trigger: triggerConfig,
  condition: z.object({ expression: expression('CEL; true follows on_success, false on_failure (absent: the run ends)') }),
  switch: z
    .object({
      expression: expression('CEL; its value is compared with each case value'),
      cases: z.array(z.object({ value: switchCaseValue, next_ref: stepRef('Step to go to') })).min(1).max(100),
      default_ref: stepRef('Step when no case matches (absent: on_success, else the next step by step_order)').optional(),
    })
    .superRefine((config, ctx) => {
      const seen = new Set<string>();
      config.cases.forEach((c, i) => {
        const value = JSON.stringify(c.value);
        if (seen.has(value)) ctx.addIssue({ code: 'custom', path: ['cases', i, 'value'], message: `duplicate case value ${value}` });
        seen.add(value);
      });
    }),
  delay: z
    .object({
      seconds: seconds(YEAR_SECONDS, 'Seconds to wait (1-31536000)').optional(),
      until: z
        .string()
        .max(1000)
        .refine((v) => hasTemplate(v) || isoDateTime.safeParse(v).success, 'must be an ISO date-time with offset or contain a {{template}}')
        .optional(),
    })
    .superRefine((config, ctx) => {
      if ((config.seconds === undefined) === (config.until === undefined)) {
        ctx.addIssue({ code: 'custom', path: [], message: 'give exactly one of seconds or until' });
      }
    }),
  loop: z.object({
    items: expression('CEL giving the list to iterate over'),
    step_ref: stepRef('First step of the body, run once per item'),
    max_iterations: z.number().int().min(1).max(10_000).optional().describe(`Most items run (default ${DEFAULT_LOOP_MAX_ITERATIONS})`),
  }),
  ai_intent: z
    .object({
      intent_id: text(200).optional().describe('A custom intent id, or `domain/intent` of a built-in intent'),
      domain: key.optional(),
      intent: key.optional(),
      input: templateObject('The intent input; strings may contain {{templates}} (absent: the run\'s input, as the trigger received it)').optional(),
    })
    .superRefine((config, ctx) => {
      const byId = config.intent_id !== undefined;
      const byKey = config.domain !== undefined || config.intent !== undefined;
      if (byId === byKey) ctx.addIssue({ code: 'custom', path: [], message: 'give either intent_id or domain and intent' });
      else if (byKey && config.domain === undefined) ctx.addIssue({ code: 'custom', path: ['domain'], message: 'is required with intent' });
      else if (byKey && config.intent === undefined) ctx.addIssue({ code: 'custom', path: ['intent'], message: 'is required with domain' });
    }),
  ai_agent: z.object({ agent_key: key, message: text(100_000).describe('The user message; may contain {{templates}}') }),
  approval: z.object({
    message: text(10_000).describe('What the approver is asked; may contain {{templates}}'),
    timeout_seconds: seconds(YEAR_SECONDS, 'Seconds before the approval times out and on_failure is followed').optional(),
  }),
  end: z.object({ output: z.unknown().optional().describe('The run output: any JSON, strings may contain {{templates}} (absent: null)') }),
} satisfies Record<Exclude<StepType, 'action'>, z.ZodType>;

/** Config fields holding a CEL expression, per step type. */
export const EXPRESSION_FIELDS: Partial<Record<StepType, readonly string[]>> = {
  condition: ['expression'],
  switch: ['expression'],
  loop: ['items'],
};

export const isStepType = (value: unknown): value is StepType => (STEP_TYPES as readonly unknown[]).includes(value);
export const isActionId = (value: unknown): value is ActionId => (ACTION_IDS as readonly unknown[]).includes(value);

/**
 * The zod schema of a step's config: per step type, and for 'action' per action id. Null for an
 * unknown step type or action id (including a missing action id).
 */
export function stepConfigSchema(stepType: StepType, actionId: string | null): z.ZodType | null {
  if (stepType === 'action') return isActionId(actionId) ? actionConfigSchemas[actionId] : null;
  return isStepType(stepType) ? stepConfigSchemas[stepType] : null;
}

const isPlainObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

/** `sent` without the keys zod dropped from `parsed`; values stay as sent (untrimmed). */
function keepParsedKeys(sent: unknown, parsed: unknown): unknown {
  // Free-form values (z.unknown) come back as the very object sent: nothing below them was dropped,
  // so the walk follows only the schema's own objects, never the depth of client JSON.
  if (sent === parsed) return sent;
  if (Array.isArray(sent) && Array.isArray(parsed)) return sent.map((item, i) => keepParsedKeys(item, parsed[i]));
  if (isPlainObject(sent) && isPlainObject(parsed)) {
    return Object.fromEntries(Object.entries(sent).filter(([k]) => Object.hasOwn(parsed, k)).map(([k, v]) => [k, keepParsedKeys(v, parsed[k])]));
  }
  return sent;
}

/**
 * A step's config without the keys its schema does not know (at any level the schema describes),
 * as stored. A config that does not fit its schema is returned as sent: validation reports it.
 */
export function stripUnknownConfigKeys(stepType: StepType, actionId: string | null, config: Record<string, unknown>): Record<string, unknown> {
  const schema = stepConfigSchema(stepType, actionId);
  const parsed = schema?.safeParse(config);
  return parsed?.success ? (keepParsedKeys(config, parsed.data) as Record<string, unknown>) : config;
}
