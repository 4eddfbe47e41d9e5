// Which tables hold a tenant's rows and in what order they load, read from PostgreSQL's catalog at
// run time: a table added by a later migration is exported, imported and deleted with its tenant
// without new code. Raw SQL: system catalogs are beyond the entities Kysely is typed from.
import type { SqlPool } from '../../../db/sql-pool.js';
import { DERIVED_TABLES, PLATFORM_TABLES } from '../tenant-archive.js';

type Query = SqlPool['query'];

/** How a table's rows of one tenant are found. */
export type RowScope =
  /** Its own tenant_id column. */
  | { kind: 'tenant_id' }
  /** The tenants table: the row whose id is the tenant's. */
  | { kind: 'tenant_row' }
  /** A foreign key to a parent table of the tenant (a table without tenant_id of its own). */
  | { kind: 'parent'; parent: string; columns: string[]; parentColumns: string[] };

export interface TenantTable {
  name: string;
  /** The columns an insert writes (generated ones are left to the database). */
  columns: string[];
  primaryKey: string[];
  scope: RowScope;
}

export interface TenantCatalog {
  /** Every table holding the tenant's rows, parents before children. */
  tables: TenantTable[];
  /** Tables that are no tenant's data and not declared as the platform's (a new table to classify). */
  unclassified: string[];
}

interface TableRow {
  name: string;
  has_tenant_id: boolean;
  columns: string[];
  primary_key: string[] | null;
}

interface ForeignKeyRow {
  child: string;
  parent: string;
  child_columns: string[];
  parent_columns: string[];
}

const IDENTIFIER = /^[a-z_][a-z0-9_]*$/;

/** A table or column name quoted for SQL; anything but a plain lower-case name is refused (names come from the catalog, never from a request). */
export function ident(name: string): string {
  if (!IDENTIFIER.test(name)) throw new Error(`not a plain identifier: ${JSON.stringify(name)}`);
  return `"${name}"`;
}

/** The tables of the current schema (partitions are read through their parent), their columns and primary keys. */
async function selectTables(query: Query): Promise<TableRow[]> {
  // Raw(catalog): pg_class, pg_attribute and pg_index.
  return query<TableRow>(
    `select c.relname as name,
            exists (select 1 from pg_attribute a where a.attrelid = c.oid and a.attname = 'tenant_id' and not a.attisdropped) as has_tenant_id,
            array(select a.attname::text from pg_attribute a
                   where a.attrelid = c.oid and a.attnum > 0 and not a.attisdropped and a.attgenerated = ''
                   order by a.attnum) as columns,
            (select array(select a.attname::text from unnest(i.indkey::int2[]) with ordinality k(attnum, ord)
                            join pg_attribute a on a.attrelid = c.oid and a.attnum = k.attnum order by k.ord)
               from pg_index i where i.indrelid = c.oid and i.indisprimary) as primary_key
       from pg_class c
      where c.relnamespace = current_schema()::regnamespace and c.relkind in ('r', 'p') and not c.relispartition
      order by c.relname`,
  );
}

/** Foreign keys between tables of the current schema (declared on the tables, not the copies on their partitions). */
async function selectForeignKeys(query: Query): Promise<ForeignKeyRow[]> {
  // Raw(catalog): pg_constraint and pg_class.
  return query<ForeignKeyRow>(
    `select c.relname as child, p.relname as parent,
            array(select a.attname::text from unnest(con.conkey) with ordinality k(attnum, ord)
                    join pg_attribute a on a.attrelid = con.conrelid and a.attnum = k.attnum order by k.ord) as child_columns,
            array(select a.attname::text from unnest(con.confkey) with ordinality k(attnum, ord)
                    join pg_attribute a on a.attrelid = con.confrelid and a.attnum = k.attnum order by k.ord) as parent_columns
       from pg_constraint con
       join pg_class c on c.oid = con.conrelid
       join pg_class p on p.oid = con.confrelid
      where con.contype = 'f' and con.conparentid = 0 and c.relnamespace = current_schema()::regnamespace
      order by c.relname, con.conname`,
  );
}

/** The tenant's tables in load order, read from the catalog. */
export async function readTenantCatalog(query: Query): Promise<TenantCatalog> {
  const [tables, foreignKeys] = await Promise.all([selectTables(query), selectForeignKeys(query)]);
  const byName = new Map(tables.map((t) => [t.name, t]));
  const scopes = new Map<string, RowScope>();
  for (const table of tables) {
    if (table.name === 'tenants') scopes.set(table.name, { kind: 'tenant_row' });
    else if (table.has_tenant_id) scopes.set(table.name, { kind: 'tenant_id' });
  }
  // Tables without tenant_id reached through a parent of the tenant, however deep (a parent's own
  // scope may be found on a later pass).
  for (let changed = true; changed; ) {
    changed = false;
    for (const table of tables) {
      if (scopes.has(table.name) || table.name in PLATFORM_TABLES) continue;
      const link = foreignKeys.find((fk) => fk.child === table.name && fk.parent !== table.name && scopes.has(fk.parent));
      if (!link) continue;
      scopes.set(table.name, { kind: 'parent', parent: link.parent, columns: link.child_columns, parentColumns: link.parent_columns });
      changed = true;
    }
  }
  const unclassified = tables.filter((t) => !scopes.has(t.name) && !(t.name in PLATFORM_TABLES)).map((t) => t.name);
  const owned = tables.filter((t) => scopes.has(t.name));
  const order = loadOrder(owned.map((t) => t.name), foreignKeys, new Set(owned.filter((t) => scopes.get(t.name)!.kind === 'tenant_id').map((t) => t.name)));
  return {
    tables: order.map((name) => {
      const row = byName.get(name)!;
      return { name, columns: row.columns, primaryKey: row.primary_key ?? [], scope: scopes.get(name)! };
    }),
    unclassified,
  };
}

/**
 * Parents before children (foreign keys, a table with tenant_id after the tenants row even without
 * a foreign key to it, and a derived table after its source), ties by name so every server orders
 * the same schema the same way.
 */
function loadOrder(names: string[], foreignKeys: ForeignKeyRow[], tenantScoped: ReadonlySet<string>): string[] {
  const included = new Set(names);
  const after = new Map<string, Set<string>>(names.map((n) => [n, new Set<string>()]));
  if (included.has('tenants')) for (const name of tenantScoped) after.get(name)!.add('tenants');
  for (const fk of foreignKeys) {
    if (fk.child !== fk.parent && included.has(fk.child) && included.has(fk.parent)) after.get(fk.child)!.add(fk.parent);
  }
  for (const [derived, { from }] of Object.entries(DERIVED_TABLES)) {
    if (included.has(derived) && included.has(from)) after.get(derived)!.add(from);
  }
  const order: string[] = [];
  const placed = new Set<string>();
  while (order.length < names.length) {
    const ready = names.filter((n) => !placed.has(n) && [...after.get(n)!].every((p) => placed.has(p))).sort();
    if (!ready.length) throw new Error(`the tenant's tables reference each other in a circle: ${names.filter((n) => !placed.has(n)).join(', ')}`);
    order.push(ready[0]);
    placed.add(ready[0]);
  }
  return order;
}

/**
 * The condition selecting the tenant's rows of `table` (alias `alias`), the tenant's id being `param`
 * (e.g. `$1`). A table reached through parents nests one `exists` per level.
 */
export function tenantRowsSql(catalog: TenantCatalog, table: TenantTable, alias: string, param: string): string {
  const scope = table.scope;
  if (scope.kind === 'tenant_id') return `${alias}.tenant_id = ${param}`;
  if (scope.kind === 'tenant_row') return `${alias}.id = ${param}`;
  const parent = catalog.tables.find((t) => t.name === scope.parent)!;
  const parentAlias = `${alias}p`;
  const join = scope.columns.map((c, i) => `${parentAlias}.${ident(scope.parentColumns[i])} = ${alias}.${ident(c)}`).join(' and ');
  return `exists (select 1 from ${ident(parent.name)} ${parentAlias} where ${join} and ${tenantRowsSql(catalog, parent, parentAlias, param)})`;
}

/** `order by` the primary key (every row's text when a table has none: still one order for the same rows). */
export const primaryKeyOrderSql = (table: TenantTable, alias: string): string =>
  table.primaryKey.length ? table.primaryKey.map((c) => `${alias}.${ident(c)}`).join(', ') : `${alias}::text`;
