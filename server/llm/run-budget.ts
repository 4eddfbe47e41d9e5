// The hard cost cap of a run. Before every model call the worst case of that call is reserved:
// its prompt (counted) plus the most it may answer. When even a short answer does not fit, the
// call is not made. Concurrent calls (parallel tools) each hold their reservation, so together
// they cannot pass the cap either; a finished call replaces its reservation with what it cost.
import type { ModelPrice } from './prices.js';

/** A call whose budget allows fewer answer tokens than this (or than it asked for) is not made. */
export const MIN_ANSWER_TOKENS = 16;

export interface BudgetReservation {
  /** The answer tokens this call may use (sent as max_tokens). */
  maxTokens: number;
  /** Replaces the reservation with the call's real cost (0 when it failed before any usage). */
  settle(actualCostUsd: number): void;
}

const perToken = (usdPerMillion: number) => usdPerMillion / 1_000_000;

export class RunBudget {
  private spentUsd = 0;
  private reservedUsd = 0;

  /**
   * `capUsd` null: no cap of its own (calls are still added up). `parent`: the budget of the run
   * that started this one (an agent's workflow tool, a workflow's agent step): every reservation
   * and cost counts there too, so a tree of nested runs never spends past its root's cap.
   */
  constructor(
    readonly capUsd: number | null,
    readonly parent: RunBudget | null = null,
  ) {}

  get spent(): number {
    return this.spentUsd;
  }

  /** Whether this budget or one above it has a cap. */
  get capped(): boolean {
    return this.capUsd !== null || (this.parent?.capped ?? false);
  }

  /** What the caps still allow (this one's and every parent's), reservations of running calls deducted. */
  remaining(): number {
    const own = this.capUsd === null ? Number.POSITIVE_INFINITY : this.capUsd - this.spentUsd - this.reservedUsd;
    return this.parent ? Math.min(own, this.parent.remaining()) : own;
  }

  /**
   * Reserves the worst case of a call with `promptTokens` and up to `wantedMaxTokens` answer
   * tokens, lowering max_tokens to what the budget can pay; null when the call must not be made.
   * An unpriced model costs nothing, so it always fits.
   */
  reserve(price: ModelPrice | null, promptTokens: number, wantedMaxTokens: number): BudgetReservation | null {
    let maxTokens = wantedMaxTokens;
    let reserved = 0;
    if (this.capped && price) {
      const promptCost = promptTokens * perToken(price.input);
      const left = this.remaining() - promptCost;
      if (left < 0) return null;
      if (price.output > 0) maxTokens = Math.min(wantedMaxTokens, Math.floor(left / perToken(price.output)));
      if (maxTokens < Math.min(MIN_ANSWER_TOKENS, wantedMaxTokens)) return null;
      reserved = promptCost + maxTokens * perToken(price.output);
    }
    this.hold(reserved);
    let settled = false;
    return {
      maxTokens,
      settle: (actual: number) => {
        if (settled) return;
        settled = true;
        this.hold(-reserved);
        this.add(actual);
      },
    };
  }

  /** Adds spend that was not reserved through this budget (e.g. a tool's own metered work); parents count it too. */
  add(costUsd: number): void {
    this.spentUsd += costUsd;
    this.parent?.add(costUsd);
  }

  private hold(usd: number): void {
    this.reservedUsd += usd;
    this.parent?.hold(usd);
  }
}
