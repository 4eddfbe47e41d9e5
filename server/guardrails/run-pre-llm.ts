// The pre_llm stage: what the provider may receive. Checks, in order: length, prompt injection,
// blocked terms, PII. Redaction (the default PII action) rewrites the content; any "block" makes
// `passed` false and adds a user-safe `fallback`.
import type { GuardrailIssue, PiiEntity, PreLlmResult } from './guardrails.types.js';
import { findBlockedTermsInMatchingForm } from './blocked-terms.js';
import { resolveGuardrailsConfig, type GuardrailsConfigLike, type ResolvedGuardrailsConfig } from './guardrails-config.js';
import { detectInjectionNormalized, type InjectionCategory } from './injection.js';
import { blockedTermIssue, FALLBACK, injectionIssue, piiIssue, tooLongIssue } from './issues.js';
import { matchingForm, normalizeWithMap } from './normalize.js';
import { applyRedactions, detectPiiNormalized } from './pii.js';

export interface PreLlmInputResult<T> {
  passed: boolean;
  /** The input with every string value redacted (keys and non-string values unchanged). */
  input: T;
  issues: GuardrailIssue[];
  fallback?: string;
}

/** Length in Unicode code points (what a person calls characters). */
export function charLength(text: string): number {
  let n = 0;
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code < 0xd800 || code > 0xdbff || i + 1 >= text.length) n++;
    else {
      const next = text.charCodeAt(i + 1);
      n++;
      if (next >= 0xdc00 && next <= 0xdfff) i++;
    }
  }
  return n;
}

/** What the checks found across one or more strings (paths are set for structured input). */
class Findings {
  length = 0;
  injection: { score: number; categories: Set<InjectionCategory>; rules: Set<string>; paths: string[] } | null = null;
  blocked = new Map<string, string[]>();
  pii = new Map<PiiEntity, { count: number; paths: string[] }>();

  constructor(private readonly cfg: ResolvedGuardrailsConfig) {}

  /** Checks one string (`length`: its charLength, when already known); returns the text with PII redacted when the action is `redact`. */
  inspect(text: string, path: string | null, length = charLength(text)): string {
    const cfg = this.cfg;
    this.length += length;
    // One normalisation serves the injection rules and every PII detector.
    const normalized = normalizeWithMap(text);
    if (cfg.injectionAction !== 'off') {
      const found = detectInjectionNormalized(normalized.text);
      if (found.detected) {
        this.injection ??= { score: 0, categories: new Set(), rules: new Set(), paths: [] };
        this.injection.score = Math.max(this.injection.score, found.score);
        found.categories.forEach((c) => this.injection!.categories.add(c));
        found.rules.forEach((r) => this.injection!.rules.add(r));
        if (path !== null) this.injection.paths.push(path);
      }
    }
    const terms = cfg.blockedTerms.length > 0 ? findBlockedTermsInMatchingForm(matchingForm(normalized.text), cfg.blockedTerms) : [];
    for (const term of terms) {
      const paths = this.blocked.get(term) ?? [];
      if (path !== null) paths.push(path);
      this.blocked.set(term, paths);
    }
    if (cfg.piiAction === 'off' || cfg.entities.length === 0) return text;
    const matches = detectPiiNormalized(normalized, cfg.entities);
    if (matches.length === 0) return text;
    for (const match of matches) {
      const entry = this.pii.get(match.entity) ?? { count: 0, paths: [] };
      entry.count++;
      if (path !== null && entry.paths[entry.paths.length - 1] !== path) entry.paths.push(path);
      this.pii.set(match.entity, entry);
    }
    return cfg.piiAction === 'redact' ? applyRedactions(text, matches) : text;
  }

  verdict(structured: boolean): { passed: boolean; issues: GuardrailIssue[]; fallback?: string } {
    const cfg = this.cfg;
    const issues: GuardrailIssue[] = [];
    const fallbacks: string[] = [];
    const paths = (list: string[]) => (structured ? [...new Set(list)].slice(0, 50) : undefined);
    if (cfg.maxInputChars !== null && this.length > cfg.maxInputChars) {
      issues.push(tooLongIssue(this.length, cfg.maxInputChars));
      fallbacks.push(FALLBACK.tooLong(cfg.maxInputChars));
    }
    if (this.injection && cfg.injectionAction !== 'off') {
      const result = { score: this.injection.score, categories: [...this.injection.categories], rules: [...this.injection.rules] };
      issues.push(injectionIssue(result, cfg.injectionAction, paths(this.injection.paths)));
      if (cfg.injectionAction === 'block') fallbacks.push(FALLBACK.injection);
    }
    if (this.blocked.size > 0) {
      issues.push(blockedTermIssue([...this.blocked.keys()], 'input', paths([...this.blocked.values()].flat())));
      fallbacks.push(FALLBACK.blockedTerm);
    }
    if (this.pii.size > 0 && cfg.piiAction !== 'off') {
      for (const entity of cfg.entities) {
        const entry = this.pii.get(entity);
        if (entry) issues.push(piiIssue(entity, entry.count, cfg.piiAction, 'input', paths(entry.paths)));
      }
      if (cfg.piiAction === 'block') fallbacks.push(FALLBACK.pii(cfg.entities.filter((e) => this.pii.has(e))));
    }
    const passed = fallbacks.length === 0;
    return passed ? { passed, issues } : { passed, issues, fallback: fallbacks[0] };
  }
}

/**
 * The pre_llm stage over one text. Defaults (config null or partial): PII redact, injection block.
 * `content` is what the provider may receive (redacted); when `passed` is false, `fallback` is a
 * message safe to show the end user.
 */
export function runPreLlm(content: string, config?: GuardrailsConfigLike): PreLlmResult {
  const cfg = resolveGuardrailsConfig(config);
  const length = charLength(content);
  const tooLong = refuseOverLength(length, cfg);
  if (tooLong) return { ...tooLong, content: '' };
  const findings = new Findings(cfg);
  const redacted = findings.inspect(content, null, length);
  return { ...findings.verdict(false), content: redacted };
}

const MAX_DEPTH = 64;

/** Total length of the strings in `value` (UTF-16 units), at any depth up to MAX_DEPTH. */
export function totalChars(value: unknown, depth = 0): number {
  if (typeof value === 'string') return value.length;
  if (depth >= MAX_DEPTH || value === null || typeof value !== 'object') return 0;
  let sum = 0;
  for (const item of Array.isArray(value) ? value : Object.values(value)) sum += totalChars(item, depth + 1);
  return sum;
}

// Over the limit: refused at once, without scanning (the scan is what costs).
function refuseOverLength(length: number, cfg: ResolvedGuardrailsConfig) {
  if (cfg.maxInputChars === null || length <= cfg.maxInputChars) return null;
  return { passed: false, issues: [tooLongIssue(length, cfg.maxInputChars)], fallback: FALLBACK.tooLong(cfg.maxInputChars) };
}

/**
 * The pre_llm stage over a structured input (an intent's `input`): every string value, at any
 * depth, is checked and redacted; keys, numbers, booleans and nulls are kept. Issues are merged
 * across fields (counts add up) and name the field paths (`candidate.email`, `skills.2`).
 * `max_input_chars` applies to the total length of the strings.
 */
export function runPreLlmOnInput<T>(input: T, config?: GuardrailsConfigLike): PreLlmInputResult<T> {
  const cfg = resolveGuardrailsConfig(config);
  const tooLong = refuseOverLength(totalChars(input, 0), cfg);
  if (tooLong) return { ...tooLong, input };
  const findings = new Findings(cfg);
  const walk = (value: unknown, path: string, depth: number): unknown => {
    if (typeof value === 'string') return findings.inspect(value, path || '(root)');
    if (depth >= MAX_DEPTH || value === null || typeof value !== 'object') return value;
    if (Array.isArray(value)) return value.map((item, i) => walk(item, path ? `${path}.${i}` : String(i), depth + 1));
    if (Object.getPrototypeOf(value) !== Object.prototype && Object.getPrototypeOf(value) !== null) return value;
    const out: Record<string, unknown> = {};
    for (const [key, item] of Object.entries(value)) out[key] = walk(item, path ? `${path}.${key}` : key, depth + 1);
    return out;
  };
  const redacted = walk(input, '', 0) as T;
  return { ...findings.verdict(true), input: redacted };
}
