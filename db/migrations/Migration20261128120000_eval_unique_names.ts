import { Migration } from '@mikro-orm/migrations';

// Eval dataset and suite names are unique per tenant: a project document keys them by name, so two
// of one name made the tenant's own export impossible to plan. Duplicates stored before are renamed
// first, so this applies on any database: within a tenant and name the oldest (created_at, then id)
// keeps it, the next ones get the first free " (2)", " (3)", ... (the name cut to fit 200 characters).
const TABLES = ['eval_datasets', 'eval_suites'] as const;

const renameDuplicates = (table: string) => `do $$
declare
  dup record;
  n int;
  candidate text;
begin
  for dup in
    select id, tenant_id, name from (
      select id, tenant_id, name, created_at, row_number() over (partition by tenant_id, name order by created_at, id) as k from "${table}"
    ) ranked
    where k > 1
    order by tenant_id, name, created_at, id
  loop
    n := 2;
    loop
      candidate := left(dup.name, 200 - length(' (' || n || ')')) || ' (' || n || ')';
      exit when not exists (select 1 from "${table}" where tenant_id = dup.tenant_id and name = candidate);
      n := n + 1;
    end loop;
    update "${table}" set name = candidate where id = dup.id;
  end loop;
end $$;`;

export class Migration20261128120000_eval_unique_names extends Migration {

  override name = 'Migration20261128120000_eval_unique_names';

  override up(): void | Promise<void> {
    for (const table of TABLES) {
      this.addSql(renameDuplicates(table));
      this.addSql(`alter table "${table}" add constraint "${table}_tenant_id_name_unique" unique ("tenant_id", "name");`);
    }
  }

  override down(): void | Promise<void> {
    // The renamed duplicates keep their new names.
    for (const table of TABLES) this.addSql(`alter table "${table}" drop constraint "${table}_tenant_id_name_unique";`);
  }

}
