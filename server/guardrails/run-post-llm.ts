// The post_llm stage: what the caller may receive from the model. PII in the output (default
// redact), blocked terms (block), and the output schema (a mismatch asks for a retry).
import { checkJsonSchema, validateWithSchema } from '../common/json-schema.js';
import type { GuardrailIssue, PiiEntity, PostLlmResult } from './guardrails.types.js';
import { findBlockedTerms } from './blocked-terms.js';
import { resolveGuardrailsConfig, type GuardrailsConfigLike } from './guardrails-config.js';
import { blockedTermIssue, piiIssue, schemaInvalidIssue, schemaMismatchIssue } from './issues.js';
import { applyRedactions, detectPii } from './pii.js';

const MAX_DEPTH = 64;

/** Calls `fn` with every string in a JSON-like value (keys excluded), building nothing. */
function eachString(value: unknown, fn: (s: string) => void, depth = 0): void {
  if (typeof value === 'string') return fn(value);
  if (depth >= MAX_DEPTH || value === null || typeof value !== 'object') return;
  if (Array.isArray(value)) {
    for (const item of value) eachString(item, fn, depth + 1);
    return;
  }
  for (const key in value) if (Object.hasOwn(value, key)) eachString((value as Record<string, unknown>)[key], fn, depth + 1);
}

/** Applies `fn` to every string in a JSON-like value (keys kept), returning the new value. */
function mapStrings(value: unknown, fn: (s: string) => string, depth = 0): unknown {
  if (typeof value === 'string') return fn(value);
  if (depth >= MAX_DEPTH || value === null || typeof value !== 'object') return value;
  if (Array.isArray(value)) return value.map((item) => mapStrings(item, fn, depth + 1));
  const out: Record<string, unknown> = {};
  for (const [key, item] of Object.entries(value)) out[key] = mapStrings(item, fn, depth + 1);
  return out;
}

/** A model's text answer as JSON when the schema wants structure (```json fences tolerated). */
function valueForSchema(response: unknown, schema: Record<string, unknown>): unknown {
  if (typeof response !== 'string') return response;
  if (schema.type === 'string') return response;
  const trimmed = response.trim().replace(/^```(?:json)?\s*\n?([\s\S]*?)\n?```$/i, '$1');
  try {
    return JSON.parse(trimmed);
  } catch {
    return response;
  }
}

/**
 * The post_llm stage. `response` is the model's answer (text or parsed JSON); `outputSchema`, when
 * given and `config.output.schema` is not false, is checked with JSON Schema (the original answer
 * is checked, before redaction). `passed` is false when something blocked; `should_retry` is true
 * when the answer does not match the schema.
 */
export function runPostLlm(response: string | object, config?: GuardrailsConfigLike, outputSchema?: Record<string, unknown> | null): PostLlmResult {
  const cfg = resolveGuardrailsConfig(config);
  const issues: GuardrailIssue[] = [];
  let blocked = false;
  let shouldRetry = false;

  if (outputSchema && cfg.outputSchema) {
    const schemaProblems = checkJsonSchema(outputSchema);
    if (schemaProblems.length > 0) {
      issues.push(schemaInvalidIssue(schemaProblems.map((p) => (p.path ? `${p.path}: ${p.message}` : p.message)).join('; ')));
    } else {
      const errors = validateWithSchema(outputSchema, valueForSchema(response, outputSchema));
      if (errors.length > 0) {
        issues.push(schemaMismatchIssue(errors));
        shouldRetry = true;
      }
    }
  }

  const terms = new Set<string>();
  if (cfg.blockedTerms.length > 0) eachString(response, (s) => findBlockedTerms(s, cfg.blockedTerms).forEach((t) => terms.add(t)));
  if (terms.size > 0) {
    issues.push(blockedTermIssue([...terms], 'output'));
    blocked = true;
  }

  let result: unknown = response;
  const action = cfg.outputPiiAction;
  if (action !== 'off' && cfg.entities.length > 0) {
    const counts = new Map<PiiEntity, number>();
    // Counted first without copying the answer; only an answer with PII to redact is rebuilt.
    eachString(response, (s) => {
      for (const m of detectPii(s, cfg.entities)) counts.set(m.entity, (counts.get(m.entity) ?? 0) + 1);
    });
    if (counts.size > 0) {
      for (const entity of cfg.entities) {
        const count = counts.get(entity);
        if (count) issues.push(piiIssue(entity, count, action, 'output'));
      }
      if (action === 'redact') result = mapStrings(response, (s) => applyRedactions(s, detectPii(s, cfg.entities)));
      if (action === 'block') blocked = true;
    }
  }

  return { passed: !blocked, response: result, issues, should_retry: shouldRetry };
}
