// The GuardrailIssue objects the checks report. Issues never carry the offending text: only the
// entity kind, counts, rule names and (for structured input) the field paths.
import type { GuardrailIssue, PiiEntity } from './guardrails.types.js';
import type { InjectionCategory } from './injection.js';
import { PII_PLACEHOLDERS } from './pii.js';

export const ISSUE_CODES = {
  pii: 'pii_detected',
  injection: 'prompt_injection',
  blockedTerm: 'blocked_term',
  tooLong: 'input_too_long',
  schemaMismatch: 'output_schema_mismatch',
  schemaInvalid: 'output_schema_invalid',
} as const;

const ENTITY_LABEL: Record<PiiEntity, [string, string]> = {
  email: ['e-mail address', 'e-mail addresses'],
  phone: ['phone number', 'phone numbers'],
  credit_card: ['credit card number', 'credit card numbers'],
  ssn: 'US Social Security number,US Social Security numbers'.split(',') as [string, string],
  iban: ['IBAN', 'IBANs'],
  ip_address: ['IP address', 'IP addresses'],
  secret: ['secret (API key, token, password or private key)', 'secrets (API keys, tokens, passwords or private keys)'],
};

export const entityLabel = (entity: PiiEntity, count: number) => `${count} ${ENTITY_LABEL[entity][count === 1 ? 0 : 1]}`;

type PiiOutcome = 'redact' | 'block' | 'flag';

export function piiIssue(entity: PiiEntity, count: number, outcome: PiiOutcome, where: 'input' | 'output', paths?: string[]): GuardrailIssue {
  const what = entityLabel(entity, count);
  const message =
    outcome === 'redact'
      ? `Redacted ${what} in the ${where}`
      : outcome === 'block'
        ? `The ${where} contains ${what}; blocked`
        : `The ${where} contains ${what}`;
  return {
    code: ISSUE_CODES.pii,
    severity: entity === 'secret' ? 'error' : 'warning',
    message,
    action_taken: outcome === 'redact' ? 'modified' : outcome === 'block' ? 'blocked' : 'flagged',
    details: {
      entity,
      count,
      ...(outcome === 'redact' ? { replacement: PII_PLACEHOLDERS[entity] } : {}),
      ...(paths ? { paths } : {}),
    },
  };
}

export function injectionIssue(
  result: { score: number; categories: InjectionCategory[]; rules: string[] },
  action: 'block' | 'flag',
  paths?: string[],
): GuardrailIssue {
  return {
    code: ISSUE_CODES.injection,
    severity: 'critical',
    message: action === 'block' ? 'Possible prompt injection; the input was blocked' : 'Possible prompt injection',
    action_taken: action === 'block' ? 'blocked' : 'flagged',
    details: { categories: result.categories, rules: result.rules, score: result.score, ...(paths ? { paths } : {}) },
  };
}

export function blockedTermIssue(terms: string[], where: 'input' | 'output', paths?: string[]): GuardrailIssue {
  return {
    code: ISSUE_CODES.blockedTerm,
    severity: 'error',
    message: `The ${where} contains ${terms.length === 1 ? 'a blocked term' : `${terms.length} blocked terms`}; blocked`,
    action_taken: 'blocked',
    details: { terms, count: terms.length, ...(paths ? { paths } : {}) },
  };
}

export function tooLongIssue(length: number, limit: number): GuardrailIssue {
  return {
    code: ISSUE_CODES.tooLong,
    severity: 'error',
    message: `The input has ${length} characters; the limit is ${limit}`,
    action_taken: 'blocked',
    details: { length, limit },
  };
}

export function schemaMismatchIssue(errors: { path: string; message: string }[]): GuardrailIssue {
  return {
    code: ISSUE_CODES.schemaMismatch,
    severity: 'error',
    message: `The output does not match the output schema (${errors.length} ${errors.length === 1 ? 'problem' : 'problems'})`,
    action_taken: 'none',
    details: { errors: errors.slice(0, 20) },
  };
}

export function schemaInvalidIssue(message: string): GuardrailIssue {
  return {
    code: ISSUE_CODES.schemaInvalid,
    severity: 'error',
    message: 'The output schema is not a usable JSON Schema; the output was not checked against it',
    action_taken: 'none',
    details: { reason: message.slice(0, 500) },
  };
}

/** User-safe messages for a blocked input: they name the reason, never the content. */
export const FALLBACK = {
  tooLong: (limit: number) => `Your message is too long to process. Please shorten it to at most ${limit} characters and try again.`,
  injection: 'Your message could not be processed because it appears to contain instructions aimed at the assistant. Please rephrase your request.',
  blockedTerm: 'Your message contains language that is not allowed here. Please rephrase it and try again.',
  pii: (entities: PiiEntity[]) =>
    `Your message contains personal or sensitive information (${entities.map((e) => ENTITY_LABEL[e][1]).join(', ')}) that cannot be processed. Please remove it and try again.`,
};
