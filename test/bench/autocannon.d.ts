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
    /** Requests per second over all connections (each connection sends its share, at most). */
    overallRate?: number;
    duration?: number;
    pipelining?: number;
    timeout?: number;
    /** Run the load generator in this many worker threads. */
    workers?: number;
    /** Record latencies as measured, without the coordinated-omission correction of rate-limited runs. */
    ignoreCoordinatedOmission?: boolean;
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

  /** A run in this thread (no `workers`) also tells of each response and each request error as it happens. */
  export interface Instance extends PromiseLike<Result> {
    on(event: 'response', listener: (client: unknown, statusCode: number, resBytes: number, responseTimeMs: number) => void): this;
    on(event: 'reqError', listener: (error: Error) => void): this;
  }

  function autocannon(options: Options): Instance;
  export default autocannon;
}
