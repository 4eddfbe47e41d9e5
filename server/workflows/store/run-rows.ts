// What the workflow run statements share (run-intake.ts, run-step-writes.ts, run-waits.ts,
// run-recovery.ts): the row the engine continues a run from, and the SQL pieces several statement
// families repeat. No statement of its own.
import { sql, type Expression, type QueryCreator, type RawBuilder } from 'kysely';
import type { Database } from '../../../db/kysely.js';
import type { Resume } from '../engine/run-types.js';
import type { StepDef } from '../step-types.js';

/** The columns of a run (`workflow_runs as r`) the engine needs to continue it. */
export const STORED_RUN_SELECTION = [
  'r.id', 'r.conversation_id', 'r.input', 'r.next_step_id', 'r.steps_done', 'r.output', 'r.resume', 'r.callback_seq', 'r.callback_key',
  'r.callback_url', 'r.executions', 'r.depth',
] as const;

export interface StoredRunRow {
  id: string;
  conversation_id: string;
  input: Record<string, unknown>;
  next_step_id: string | null;
  steps_done: number;
  output: unknown;
  resume: (Resume & { step_id?: string }) | null;
  callback_seq: number;
  callback_key: string | null;
  callback_url: string | null;
  executions: number;
  depth: number;
}

/** A run's stored row with what executing it again needs (its version or test definition). */
export type ResumableRunRow = StoredRunRow & { version: number | null; definition: StepDef[] | null };

/** The columns of a run_steps row, in the order the run statements select their values. */
export const RUN_STEP_COLUMNS = [
  'id', 'tenant_id', 'run_kind', 'run_id', 'index', 'type', 'name', 'step_id', 'status', 'input', 'output', 'prompt_tokens', 'completion_tokens',
  'cost_usd', 'latency_ms', 'error', 'started_at', 'completed_at',
] as const;

/**
 * A CTE that commits the statement asynchronously (no wait for the WAL flush): a crash of the
 * database can lose the last moment of run history, never part of a statement, and the order of
 * what was written is kept. Only a statement that reads it is committed so.
 */
export const asyncCommit = (db: QueryCreator<Database>) =>
  db.selectNoFrom((eb) => eb.fn<string>('set_config', [sql.lit('synchronous_commit'), sql.lit('off'), sql.lit(true)]).as('set_config'));

/**
 * A value with the cast the statement needs (a JSON text as jsonb, a parameter PostgreSQL cannot
 * type by itself); `T` is what the cast value is, where the builder checks it against a column.
 */
export const cast = <T = unknown>(value: unknown, type: 'text' | 'jsonb' | 'json' | 'int' | 'uuid' | 'boolean' | 'timestamptz'): RawBuilder<T> =>
  sql<T>`${value}::${sql.raw(type)}`;

/** A constant written into the statement's text (a status a partial index or plan depends on), typed as itself. */
export const lit = <const V extends string | number | boolean | null>(value: V): RawBuilder<V> => sql.lit(value);

/**
 * `unnest($1::type[], …) as <alias>(column, …)`: one row per index of the arrays, for a statement
 * that writes several runs at once (one array parameter per column).
 */
export function unnestAs<Row, A extends string>(alias: A, columns: [name: keyof Row & string, type: string, values: unknown][]) {
  const arrays = columns.map(([, type, values]) => sql`${values}::${sql.raw(type)}[]`);
  return sql<Row>`unnest(${sql.join(arrays)})`.as<A>(sql`${sql.id(alias)}(${sql.join(columns.map(([name]) => sql.id(name)))})`);
}

/** `jsonb_build_object(...)` of the entries, the keys as literals. */
export const jsonbObject = (...entries: [key: string, value: Expression<unknown>][]) =>
  sql<Record<string, unknown>>`jsonb_build_object(${sql.join(entries.flatMap(([key, value]) => [sql.lit(key), value]))})`;
