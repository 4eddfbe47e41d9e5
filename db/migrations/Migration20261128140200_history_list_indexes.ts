import { Migration } from '@mikro-orm/migrations';

// Every history list pages by keyset: `where <filters> and (t, id) < ($t, $id) order by t desc, id desc
// limit n`. Each (filter set, order) gets an index that begins with the filters' equalities and ends
// in (t desc, id desc), so a page (and the capped count, index-only) reads only its own rows however
// much history there is. The id closes each index: ties in t are ordered, and a cursor is one range.
// Each new index covers the (filters, t) index it replaces, which is dropped.
//
// Kept: workflow_runs (workflow_id, status) counts a workflow's active runs without a tenant;
// sessions (status, last_activity_at) expires idle sessions across tenants; the last_activity_at
// indexes serve expiry and retention. eval_results pages on its unique (run_id, position) as it is.
const INDEXES: { table: string; name: string; columns: string; replaces?: { name: string; columns: string } }[] = [
  {
    table: 'agent_runs', name: 'agent_runs_tenant_id_agent_id_started_at_id_index', columns: '"tenant_id", "agent_id", "started_at" desc, "id" desc',
    replaces: { name: 'agent_runs_tenant_id_agent_id_started_at_index', columns: '"tenant_id", "agent_id", "started_at"' },
  },
  // The finish of a run changes its status, so that write is no longer a HOT update: the price of a
  // status filter that stays flat (a rare status would otherwise scan the agent's whole history).
  { table: 'agent_runs', name: 'agent_runs_tenant_id_agent_id_status_started_at_id_index', columns: '"tenant_id", "agent_id", "status", "started_at" desc, "id" desc' },
  {
    table: 'agent_runs', name: 'agent_runs_session_id_started_at_id_index', columns: '"session_id", "started_at" desc, "id" desc',
    replaces: { name: 'agent_runs_session_id_started_at_index', columns: '"session_id", "started_at"' },
  },
  {
    table: 'agent_sessions', name: 'agent_sessions_tenant_id_agent_id_last_activity_at_id_index', columns: '"tenant_id", "agent_id", "last_activity_at" desc, "id" desc',
    replaces: { name: 'agent_sessions_tenant_id_agent_id_last_activity_at_index', columns: '"tenant_id", "agent_id", "last_activity_at"' },
  },
  {
    table: 'workflow_runs', name: 'workflow_runs_tenant_id_workflow_id_started_at_id_index', columns: '"tenant_id", "workflow_id", "started_at" desc, "id" desc',
    replaces: { name: 'workflow_runs_tenant_id_workflow_id_started_at_index', columns: '"tenant_id", "workflow_id", "started_at"' },
  },
  { table: 'workflow_runs', name: 'workflow_runs_tenant_id_workflow_id_status_started_at_id_index', columns: '"tenant_id", "workflow_id", "status", "started_at" desc, "id" desc' },
  // Every intent run moves its session's last_activity_at, so each sessions index costs an entry per
  // run: the status and domain filters get one each; both together take one of them and filter.
  {
    table: 'sessions', name: 'sessions_tenant_id_last_activity_at_id_index', columns: '"tenant_id", "last_activity_at" desc, "id" desc',
    replaces: { name: 'sessions_tenant_id_last_activity_at_index', columns: '"tenant_id", "last_activity_at"' },
  },
  { table: 'sessions', name: 'sessions_tenant_id_status_last_activity_at_id_index', columns: '"tenant_id", "status", "last_activity_at" desc, "id" desc' },
  { table: 'sessions', name: 'sessions_tenant_id_domain_last_activity_at_id_index', columns: '"tenant_id", "domain", "last_activity_at" desc, "id" desc' },
  {
    table: 'audit_log', name: 'audit_log_tenant_id_created_at_id_index', columns: '"tenant_id", "created_at" desc, "id" desc',
    replaces: { name: 'audit_log_tenant_id_created_at_index', columns: '"tenant_id", "created_at"' },
  },
  { table: 'audit_log', name: 'audit_log_tenant_id_action_created_at_id_index', columns: '"tenant_id", "action", "created_at" desc, "id" desc' },
  {
    table: 'eval_runs', name: 'eval_runs_tenant_id_started_at_id_index', columns: '"tenant_id", "started_at" desc, "id" desc',
    replaces: { name: 'eval_runs_tenant_id_started_at_index', columns: '"tenant_id", "started_at"' },
  },
  {
    table: 'eval_runs', name: 'eval_runs_tenant_id_suite_id_started_at_id_index', columns: '"tenant_id", "suite_id", "started_at" desc, "id" desc',
    replaces: { name: 'eval_runs_tenant_id_suite_id_started_at_index', columns: '"tenant_id", "suite_id", "started_at"' },
  },
  {
    table: 'deployments', name: 'deployments_tenant_id_created_at_id_index', columns: '"tenant_id", "created_at" desc, "id" desc',
    replaces: { name: 'deployments_tenant_id_created_at_index', columns: '"tenant_id", "created_at"' },
  },
  {
    table: 'ingestion_jobs', name: 'ingestion_jobs_tenant_id_created_at_id_index', columns: '"tenant_id", "created_at" desc, "id" desc',
    replaces: { name: 'ingestion_jobs_tenant_id_created_at_index', columns: '"tenant_id", "created_at"' },
  },
  { table: 'ingestion_jobs', name: 'ingestion_jobs_tenant_id_status_created_at_id_index', columns: '"tenant_id", "status", "created_at" desc, "id" desc' },
];

export class Migration20261128140200_history_list_indexes extends Migration {

  override name = 'Migration20261128140200_history_list_indexes';

  override up(): void | Promise<void> {
    for (const index of INDEXES) {
      this.addSql(`create index if not exists "${index.name}" on "${index.table}" (${index.columns});`);
      if (index.replaces) this.addSql(`drop index if exists "${index.replaces.name}";`);
    }
  }

  override down(): void | Promise<void> {
    for (const index of [...INDEXES].reverse()) {
      if (index.replaces) this.addSql(`create index if not exists "${index.replaces.name}" on "${index.table}" (${index.replaces.columns});`);
      this.addSql(`drop index if exists "${index.name}";`);
    }
  }

}
