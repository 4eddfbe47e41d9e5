// What a tenant owns, for its export, import and deletion. The tables themselves are discovered
// from the database catalog at run time (server/tenants/store/tenant-catalog.ts): every table with a
// tenant_id column, the tenants row itself, and tables reached only through a parent that has one.
// A new table is therefore exported, imported and deleted without new code. What the catalog cannot
// tell is declared here, each with its reason: tables that belong to the platform, tables left out
// of an archive, where credentials are stored, rows a trigger derives from others, work that counts
// as in flight, and queued jobs whose payload names no tenant. test/tenants/tenant-export.test.ts
// fails when a table or a job appears that none of this accounts for.

/** The archive's `format` and `version` (the header's first two fields). */
export const ARCHIVE_FORMAT = 'liya-tenant-export';
export const ARCHIVE_VERSION = 1;

/** The archive's name for the tenant's queued jobs (graphile-worker's): not a table of ours. */
export const JOBS_TABLE = 'graphile_worker.jobs';

/** Tables that are not any tenant's data (no tenant_id and no parent with one). */
export const PLATFORM_TABLES: Readonly<Record<string, string>> = {
  mikro_orm_migrations: 'the schema version of this database',
  platform_settings: 'platform-wide settings (the encryption key of secrets at rest among them)',
  worker_heartbeats: 'job runner processes',
  platform_audit_log: 'the operator\'s own log: it records the deletion of tenants, so it must outlive them',
  provider_breakers: 'open breakers of model providers, shared by every process; a tenant key appears only as a digest and cools down in minutes',
  login_attempts:
    'sign-in throttling by e-mail, kept minutes: never exported; a deletion removes the attempts of the tenant\'s users\' e-mails',
};

/** Tables of the tenant that an archive leaves out (the deletion still removes them). */
export const LEFT_OUT_TABLES: Readonly<Record<string, string>> = {
  email_tokens: 'single-use verification and password-reset tokens, valid for hours: users ask for new ones',
  outbox_messages: 'e-mail waiting to be sent or already sent; bodies carry single-use sign-in links',
  tenant_provider_keys: 'every row is a model provider credential: set the keys again after an import (secrets_omitted counts them)',
  event_subscriptions: 'each row holds a signing secret its receiver verifies with: subscribe again after an import (a new secret for the receiver)',
  events: 'what happened on this server, kept for its subscriptions\' deliveries (retention: the events history kind)',
  event_deliveries: 'the deliveries of those events to this server\'s subscriptions',
  event_delivery_attempts: 'the log of those deliveries',
  online_eval_samples:
    'production runs queued for online evaluation, scored within seconds (their ids are this server\'s queue order); scored samples are eval results, which are exported',
};

/**
 * Where credentials are stored, encrypted with this server's key (useless anywhere else, and never to
 * leave it): `null`, a column written as null; `rows`, a table whose every row is a credential (left
 * out, LEFT_OUT_TABLES); `json`, a JSON column whose encrypted values are written as `***`, the
 * masked form the API shows. Any other value shaped like an encrypted secret is masked too (and
 * counted in the trailer), wherever it is.
 */
export const SECRET_COLUMNS: readonly { table: string; column: string; mode: 'null' | 'rows' | 'json' }[] = [
  { table: 'tenant_provider_keys', column: 'encrypted_key', mode: 'rows' },
  { table: 'workflows', column: 'webhook_secret', mode: 'null' },
  { table: 'workflows', column: 'previous_webhook_secret', mode: 'null' },
  { table: 'workflows', column: 'live_steps', mode: 'json' },
  { table: 'workflows', column: 'draft_steps', mode: 'json' },
  { table: 'workflow_versions', column: 'steps', mode: 'json' },
  { table: 'workflow_runs', column: 'definition', mode: 'json' },
  { table: 'agents', column: 'tools_config', mode: 'json' },
  { table: 'eval_suites', column: 'custom_scorer_webhook_secret', mode: 'null' },
  { table: 'eval_runs', column: 'custom_scorer_webhook_secret', mode: 'null' },
];

/**
 * The shape of a value encrypted at rest (server/llm/secret-box.ts: `v1:<iv>:<tag>:<ciphertext>`,
 * base64url), as a whole JSON string: what the export masks wherever it finds one.
 */
export const ENCRYPTED_JSON_STRING = /"v1:[A-Za-z0-9_-]{16}:[A-Za-z0-9_-]{22}:[A-Za-z0-9_-]*"/g;
export const MASKED_SECRET_JSON = '"***"';

/**
 * Tables a trigger keeps from the rows of another (`from`): loading the source on import moves them
 * already, so an import loads them after their source and replaces what the trigger made with the
 * archive's rows (which may summarise events retention has deleted since).
 */
export const DERIVED_TABLES: Readonly<Record<string, { from: string; by: string }>> = {
  usage_daily: { from: 'usage_events', by: 'the usage_events_daily_rollup trigger' },
};

/** Work a deletion would cut short: refused (409 RUNS_IN_FLIGHT) unless forced, then cancelled first. */
export const IN_FLIGHT: readonly { table: 'workflow_runs' | 'agent_runs' | 'eval_runs' | 'ingestion_jobs'; statuses: readonly string[] }[] = [
  { table: 'workflow_runs', statuses: ['running', 'waiting'] },
  { table: 'agent_runs', statuses: ['running'] },
  { table: 'eval_runs', statuses: ['pending', 'running'] },
  { table: 'ingestion_jobs', statuses: ['pending', 'running'] },
];

/**
 * Queued jobs whose payload has no tenant_id: the row of ours their payload names (by `field`) says
 * whose they are. Every other job of a tenant carries `tenant_id` (server/jobs/contracts.ts).
 */
export const TENANT_JOB_LINKS: Readonly<Record<string, { field: string; table: string }>> = {
  ingest_document: { field: 'jobId', table: 'ingestion_jobs' },
  send_mail: { field: 'messageId', table: 'outbox_messages' },
};

/** The tasks whose jobs belong to a tenant: an import queues no other (server/jobs/contracts.ts). */
export const TENANT_TASKS: readonly string[] = ['workflow_continue', 'workflow_callback', 'workflow_schedule', 'eval_run', 'ingest_document', 'send_mail', 'deliver_events', 'online_eval_intake'];

/** Jobs of the platform, no tenant's: never exported nor removed with a tenant. */
export const PLATFORM_TASKS: readonly string[] = ['prune_expired', 'enforce_retention', 'online_eval_sweep'];

/** The documented format, for the OpenAPI document and the README. */
export const ARCHIVE_FORMAT_NOTE = `The archive is NDJSON (\`application/x-ndjson\`, UTF-8, one JSON value per line):
1. a header \`{"format": "${ARCHIVE_FORMAT}", "version": ${ARCHIVE_VERSION}, "tenant_id", "tenant_name", "exported_at", "schema_version", "tables": [...], "left_out": [{table, reason}], "secrets_omitted": [{table, column, rows}]}\`;
\`tables\` lists every table in load order (parents before children) and last \`${JOBS_TABLE}\`, the tenant's queued jobs;
\`schema_version\` is the last database migration of the exporting server;
2. one line per row, \`{"table": "<name>", "row": {<column>: <value>}}\`, a table's rows together and in its primary key's order:
each row as PostgreSQL's \`to_jsonb\` writes it (timestamps ISO 8601 in UTC, numerics exact, bytea as \`\\\\x\` hex, document
chunk embeddings as stored), jobs as \`{task, payload, run_at, job_key, max_attempts, priority, queue_name}\`;
3. a trailer \`{"end": true, "rows": {<table>: <count>}, "secrets_omitted": [...]}\`. An archive without its trailer is
incomplete: the export failed or was cut off.
Everything the tenant owns is in it (resources, history, documents with their chunks, usage, audit log, API key and password
hashes) except: e-mail tokens and the mail outbox (single-use links), and credentials: tenant provider keys are left out,
encrypted columns (webhook signing secrets, scorer secrets) are null and encrypted values inside definitions (MCP server
headers, http_request step headers and credential-carrying URLs) read \`***\`, as the API shows them; \`secrets_omitted\`
counts them per table and column: set them again after an import. API key and password hashes are kept (they cannot be used
to sign in), so the tenant's keys and logins work on the server it is imported into.`;
