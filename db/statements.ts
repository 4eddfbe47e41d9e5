// Statements for the SqlPool written with Kysely, typed from the entities, and compiled once when
// their module loads: the hot paths keep their one round trip and their named prepared statement,
// and a renamed column fails the type check instead of a run.
import {
  DummyDriver,
  Kysely,
  PostgresAdapter,
  PostgresIntrospector,
  PostgresQueryCompiler,
  type Compilable,
  type InferResult,
} from 'kysely';
import type { Database } from './kysely.js';
import type { SqlPool } from './sql-pool.js';

/**
 * A Kysely that builds and compiles statements and never connects: statements built with it run on
 * the SqlPool through `statement()`. (kyselyOf(em) is the one bound to MikroORM's connection.)
 */
export const build = new Kysely<Database>({
  dialect: {
    createAdapter: () => new PostgresAdapter(),
    createDriver: () => new DummyDriver(),
    createIntrospector: (db) => new PostgresIntrospector(db),
    createQueryCompiler: () => new PostgresQueryCompiler(),
  },
});

/** A named parameter: where a statement takes a value at run time (compiled to `$n`). */
class NamedParam {
  readonly name: string;
  constructor(name: string) {
    this.name = name;
  }
}

/**
 * The parameters of a statement, each typed as the value it stands for so the builder checks it
 * against the column it meets. Only a stand-in: `p.x` is a marker the compiled text numbers.
 */
export type Params<P> = { readonly [K in keyof P]-?: P[K] };

function paramsOf<P>(): Params<P> {
  return new Proxy({} as Params<P>, {
    get: (_target, name) => (typeof name === 'string' ? new NamedParam(name) : undefined),
  });
}

/** How a statement reads a value: by a parameter's name, or a constant the builder put in. */
type Slot = { name: string } | { constant: unknown };

/** What a statement needs to run: the pool, or a transaction's query function. */
export type SqlRunner = SqlPool | SqlPool['query'];

export interface Statement<P, R> {
  /** The prepared statement's name on every connection. */
  readonly name: string;
  /** The compiled text, `$1`… in the order of `values`. */
  readonly text: string;
  /** The positional values for `text`, read from the named ones. */
  values(params: P): unknown[];
  /** Runs it as a named prepared statement; its rows. */
  run(sql: SqlRunner, params: P): Promise<R[]>;
  /** The same statement with its rows typed as the driver returns them (numeric as text, counts as the cast says). */
  as<Row>(): Statement<P, Row>;
}

/**
 * Compiles the statement `define` builds from named parameters, once. `statement<P>()` fixes the
 * parameters' types and lets the rows' type be inferred:
 *
 *     const FIND = statement<{ tenantId: string; id: string }>()('liya_find_x', (p) =>
 *       build.selectFrom('x').select(['id', 'name']).where('tenant_id', '=', p.tenantId).where('id', '=', p.id));
 *     const rows = await FIND.run(sql, { tenantId, id });
 *
 * A value the statement always has (a status literal a partial index is built on) is written with
 * `sql.lit`, so it stays in the text where the planner sees it.
 */
export function statement<P>() {
  return <Q extends Compilable<unknown>>(name: string, define: (p: Params<P>) => Q): Statement<P, InferResult<Q>[number] & {}> =>
    compileStatement<P, InferResult<Q>[number] & {}>(name, define(paramsOf<P>()));
}

function compileStatement<P, R>(name: string, query: Compilable<unknown>): Statement<P, R> {
  const compiled = query.compile();
  const slots: Slot[] = compiled.parameters.map((value) => (value instanceof NamedParam ? { name: value.name } : { constant: value }));
  const values = (params: P): unknown[] =>
    slots.map((slot) => ('name' in slot ? normalise((params as Record<string, unknown>)[slot.name]) : slot.constant));
  const self: Statement<P, R> = {
    name,
    text: compiled.sql,
    values,
    run: (sql, params) => (typeof sql === 'function' ? sql : sql.query)<R & object>(compiled.sql, values(params), name),
    as: <Row>() => self as unknown as Statement<P, Row>,
  };
  return self;
}

/** `undefined` is not a value PostgreSQL takes: an omitted optional parameter is NULL. */
function normalise(value: unknown): unknown {
  return value === undefined ? null : value;
}

/**
 * Compiles and runs a statement whose shape depends on the call (a list with optional filters, each
 * with its own index): unnamed, so the server plans it for the values given.
 */
export async function runBuilt<Q extends Compilable<unknown>>(sql: SqlRunner, query: Q): Promise<(InferResult<Q>[number] & {})[]> {
  const compiled = query.compile();
  return (typeof sql === 'function' ? sql : sql.query)<InferResult<Q>[number] & object>(compiled.sql, [...compiled.parameters]);
}
