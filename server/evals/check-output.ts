// The deterministic check of a case's expected_output, made before the judge: a string must occur in
// the output (the output's JSON text when it is not a string), an object must partially equal it.
export interface CheckResult {
  kind: 'none' | 'substring' | 'partial_match';
  /** null when there is nothing to check. */
  passed: boolean | null;
  /** Where an object check first differed (a dotted path), or what was not found. */
  detail?: string;
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * Partial deep equality: every key of `expected` must be in `actual` with a matching value,
 * recursively; arrays match element by element with the same length; other values by ===.
 * Returns the path of the first difference, or null when it matches.
 */
export function firstDifference(expected: unknown, actual: unknown, path = ''): string | null {
  if (isObject(expected)) {
    if (!isObject(actual)) return path || '(root)';
    for (const [key, value] of Object.entries(expected)) {
      const diff = firstDifference(value, actual[key], path ? `${path}.${key}` : key);
      if (diff !== null) return diff;
    }
    return null;
  }
  if (Array.isArray(expected)) {
    if (!Array.isArray(actual) || actual.length !== expected.length) return path || '(root)';
    for (let i = 0; i < expected.length; i++) {
      const diff = firstDifference(expected[i], actual[i], `${path}[${i}]`);
      if (diff !== null) return diff;
    }
    return null;
  }
  return expected === actual ? null : path || '(root)';
}

export function checkOutput(expected: unknown, output: unknown): CheckResult {
  if (expected === null || expected === undefined) return { kind: 'none', passed: null };
  if (typeof expected === 'string') {
    const text = typeof output === 'string' ? output : JSON.stringify(output ?? null);
    const passed = text.includes(expected);
    return passed ? { kind: 'substring', passed } : { kind: 'substring', passed, detail: `"${expected.slice(0, 200)}" not found in the output` };
  }
  const diff = firstDifference(expected, output);
  return diff === null ? { kind: 'partial_match', passed: true } : { kind: 'partial_match', passed: false, detail: `differs at ${diff}` };
}
