// Types of scripts/build.mjs for the TypeScript that imports it (tests and benchmarks).
export declare const projectRoot: string;
export declare const distDir: string;
export declare function hashSources(): string | null;
export declare function typescriptInstalled(): boolean;
export declare function buildDist(): void;
export type BuildOutcome = 'up to date' | 'built' | 'stale' | 'missing';
export declare function buildDistIfNeeded(): BuildOutcome;
export declare function describeOutcome(outcome: BuildOutcome): string;
export declare function ensureTestBuild(): string;
