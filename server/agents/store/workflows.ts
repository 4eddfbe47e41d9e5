// Reads of the workflows table, which the workflows feature owns and writes
// (server/workflows/store/workflows.ts); agents only check references here.
import { kyselyOf } from '../../../db/kysely.js';
import type { EntityManager } from '../../../db/orm.js';

/** The tenant's workflows (any status) whose id is one of `ids` or whose key is one of `keys`. */
export async function findWorkflowRefs(em: EntityManager, tenantId: string, ids: string[], keys: string[]): Promise<{ id: string; workflow_key: string }[]> {
  if (!ids.length && !keys.length) return [];
  return kyselyOf(em)
    .selectFrom('workflows')
    .select(['id', 'workflow_key'])
    .where('tenant_id', '=', tenantId)
    .where((eb) => eb.or([...(ids.length ? [eb('id', 'in', ids)] : []), ...(keys.length ? [eb('workflow_key', 'in', keys)] : [])]))
    .execute();
}
