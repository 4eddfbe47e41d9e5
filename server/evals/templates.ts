// Shared starter datasets for evaluations: tenants list them (`GET /v1/evals/datasets/templates`)
// and clone one into their own dataset. The data lives in templates/<template id>.json, one file per
// template; this module loads the files once, checks their shape and lists them in a fixed order.
// test/evals/templates.test.ts checks that every case's input satisfies the intent's input schema,
// and that every `expected_output` only names fields and enum values of its output schema.
//
// `expected_output` is set only where any reasonable answer must pass: an object is a partial deep
// match on enum fields the case clearly determines, a string is a substring any correct answer
// contains. Open-ended cases leave it null and are scored by the LLM judge. Cases that carry a
// prompt injection may also be blocked by a tenant's injection guardrail; such a case ends errored
// (GUARDRAIL_BLOCKED in its result), which shows the guardrail at work rather than a bad answer.
//
// JSON modules (import attributes) rather than reading the folder at run time: tsc copies imported
// JSON files into dist/ beside the compiled code, so the build needs no extra step.
import { z } from 'zod';
import { HIRING_INTENT_KEYS } from '../hiring/hiring-intents.js';
import candidateScreening from './templates/hiring-candidate-screening-starter.json' with { type: 'json' };
import interviewQuestions from './templates/hiring-interview-questions-starter.json' with { type: 'json' };
import jobMatch from './templates/hiring-job-match-starter.json' with { type: 'json' };
import resumeAnalysis from './templates/hiring-resume-analysis-starter.json' with { type: 'json' };
import skillGapAnalysis from './templates/hiring-skill-gap-analysis-starter.json' with { type: 'json' };

// Strict objects, so a misspelt field fails the load instead of vanishing. The keys are declared in
// the files' order (zod rebuilds objects in its shape's order); `input` is a record, which keeps
// the file's key order as it is.
const templateCaseSchema = z.strictObject({
  /** The intent request input (satisfies the intent's input schema, includes user_id). */
  input: z.record(z.string(), z.unknown()).refine((input) => typeof input.user_id === 'string' && input.user_id.trim() !== '', {
    message: 'must include a user_id',
  }),
  /** Only for conversational intents that read a message. */
  message: z.string().min(1).nullable().optional(),
  /** A string: the output contains it. An object: partial deep equality against the JSON output. */
  expected_output: z.union([z.string().min(1), z.record(z.string(), z.unknown())]).nullable().optional(),
  /** What the case checks, for a human reviewer. */
  notes: z.string().min(1).nullable().optional(),
});

const templateSchema = z.strictObject({
  /** Stable slug, also the data file's name. */
  id: z.string().regex(/^[a-z0-9]+(-[a-z0-9]+)*$/),
  name: z.string().min(1),
  description: z.string().min(1),
  domain_key: z.literal('hiring'),
  /** One of the hiring intent keys. */
  intent_key: z.enum(HIRING_INTENT_KEYS),
  cases: z.array(templateCaseSchema).min(1),
});

export type EvalTemplate = z.infer<typeof templateSchema>;

/** Parses one data file; a malformed file stops the module from loading, naming the file and the fields. */
function parseTemplate(file: string, data: unknown): EvalTemplate {
  const parsed = templateSchema.safeParse(data);
  if (!parsed.success) throw new Error(`server/evals/templates/${file}.json is not a valid evaluation template:\n${z.prettifyError(parsed.error)}`);
  if (parsed.data.id !== file) throw new Error(`server/evals/templates/${file}.json holds the template "${parsed.data.id}": name the file after its id`);
  return parsed.data;
}

/** The starter datasets, in listing order. */
export const EVAL_TEMPLATES: readonly EvalTemplate[] = Object.freeze([
  parseTemplate('hiring-resume-analysis-starter', resumeAnalysis),
  parseTemplate('hiring-job-match-starter', jobMatch),
  parseTemplate('hiring-candidate-screening-starter', candidateScreening),
  parseTemplate('hiring-interview-questions-starter', interviewQuestions),
  parseTemplate('hiring-skill-gap-analysis-starter', skillGapAnalysis),
]);

const BY_ID = new Map(EVAL_TEMPLATES.map((template) => [template.id, template]));
if (BY_ID.size !== EVAL_TEMPLATES.length) throw new Error('server/evals/templates/: two templates share an id');

/** The starter dataset with this id, or undefined. */
export function findEvalTemplate(id: string): EvalTemplate | undefined {
  return BY_ID.get(id);
}
