// A list of ids as ONE array parameter (`column = any($1::uuid[])`) instead of one parameter per id
// (`in ($1, $2, ...)`): a list can be long (every run of a person's conversations, for an erasure)
// and PostgreSQL takes at most 65,535 parameters in a statement.
import { sql, type RawBuilder, type SqlBool } from 'kysely';

/** `column = any(ids)`; `column` is a fixed name, never request data. */
export const anyId = (column: string, ids: readonly string[]): RawBuilder<SqlBool> => sql<SqlBool>`${sql.ref(column)} = any(${[...ids]}::uuid[])`;
