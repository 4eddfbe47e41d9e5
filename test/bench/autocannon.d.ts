// Minimal typings for the parts of autocannon's programmatic API the benchmarks use
// (the package ships no types and @types/autocannon is not installed).
declare module 'autocannon' {
  export interface Options {
    url: string;
    method?: string;
    headers?: Record<string, string>;
    body?: string;
    /** Replace `[<id>]` in the body (and URL) with a new unique id on every request. */
    idReplacement?: boolean;
    connections?: number;
    duration?: number;
    pipelining?: number;
    timeout?: number;
    /** Run the load generator in this many worker threads. */
    workers?: number;
  }

  export interface Histogram {
    average: number;
    mean: number;
    stddev: number;
    min: number;
    max: number;
    total: number;
    p50: number;
    p90: number;
    p97_5: number;
    p99: number;
  }

  export interface Result {
    requests: Histogram;
    latency: Histogram;
    throughput: Histogram;
    errors: number;
    timeouts: number;
    mismatches: number;
    non2xx: number;
    resets: number;
    '2xx': number;
    duration: number;
    statusCodeStats: Record<string, { count: number }>;
  }

  function autocannon(options: Options): Promise<Result>;
  export default autocannon;
}
