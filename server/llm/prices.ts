// What a model call costs. Prices are USD per million tokens, as providers publish them.

export interface ModelPrice {
  input: number;
  output: number;
}

export type PriceTable = Record<string, ModelPrice>;

/**
 * OpenAI's published list prices (standard tier, USD per 1M tokens) for the common models.
 * Operators override or extend them with LLM_PRICES; a model in neither table costs 0.
 */
export const BUILT_IN_PRICES: PriceTable = {
  'gpt-5': { input: 1.25, output: 10 },
  'gpt-5-mini': { input: 0.25, output: 2 },
  'gpt-5-nano': { input: 0.05, output: 0.4 },
  'gpt-4.1': { input: 2, output: 8 },
  'gpt-4.1-mini': { input: 0.4, output: 1.6 },
  'gpt-4.1-nano': { input: 0.1, output: 0.4 },
  'gpt-4o': { input: 2.5, output: 10 },
  'gpt-4o-mini': { input: 0.15, output: 0.6 },
  'gpt-4-turbo': { input: 10, output: 30 },
  'gpt-4': { input: 30, output: 60 },
  'gpt-3.5-turbo': { input: 0.5, output: 1.5 },
  o1: { input: 15, output: 60 },
  'o1-mini': { input: 1.1, output: 4.4 },
  o3: { input: 2, output: 8 },
  'o3-mini': { input: 1.1, output: 4.4 },
  'o4-mini': { input: 1.1, output: 4.4 },
  'text-embedding-3-small': { input: 0.02, output: 0 },
  'text-embedding-3-large': { input: 0.13, output: 0 },
  'text-embedding-ada-002': { input: 0.1, output: 0 },
};

/** The built-in table with LLM_PRICES entries laid over it. */
export function buildPriceTable(overrides: PriceTable = {}): PriceTable {
  return { ...BUILT_IN_PRICES, ...overrides };
}

// Providers answer with dated snapshots (`gpt-4o-mini-2024-07-18`, `gpt-4-0613`) of the names priced above.
const SNAPSHOT_SUFFIX = /-(\d{4}-\d{2}-\d{2}|\d{4})$/;

/**
 * The price of the first candidate name found, trying each name as given and then without a
 * snapshot date. Candidates go from most to least specific (e.g. `local/llama3`, `llama3`).
 */
export function findModelPrice(prices: PriceTable, ...candidates: (string | null | undefined)[]): ModelPrice | null {
  const names = candidates.filter((name): name is string => !!name);
  for (const name of names) if (Object.hasOwn(prices, name)) return prices[name];
  for (const name of names) {
    const base = name.replace(SNAPSHOT_SUFFIX, '');
    if (base !== name && Object.hasOwn(prices, base)) return prices[base];
  }
  return null;
}

/** USD for one call; an unpriced model costs 0. */
export function computeCostUsd(price: ModelPrice | null, promptTokens: number, completionTokens: number): number {
  if (!price) return 0;
  const cost = (promptTokens * price.input + completionTokens * price.output) / 1_000_000;
  // Usage rows keep 6 decimals; rounding here keeps float noise out of sums.
  return Math.round(cost * 1e9) / 1e9;
}
