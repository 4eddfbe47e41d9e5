// The document's introduction: the decisions every route shares, where the specification is
// silent, and the plan limits.
import { describePlanLimits } from '../tenants/plan-limits.js';
import { MAX_RUN_CRASHES } from '../workflows/engine/run-workflow.js';

export const DESCRIPTION = `Liya: a self-hosted, multi-tenant AI platform.

Every JSON response is an envelope: \`{"success": true, "data": ...}\` or
\`{"success": false, "error": {"code", "message", "details"?}}\`. Validation errors are 400
INVALID_INPUT with \`details.issues\` (one entry per failing field); unexpected errors are 500
INTERNAL_ERROR with \`details.request_id\`. A write that lost a race with another request changing
the same resources (one deleted or newly referenced at the same moment) is 409 CONFLICT with
\`details.retryable: true\`. While the database is out of reach, any route may answer 503
DATABASE_UNAVAILABLE with a \`Retry-After\` header (seconds) and \`details: {retryable: true,
retry_after_seconds}\`; retry after that time. Every response carries an \`x-request-id\` header.

For generated clients: every error response (4xx, 5xx) is the \`ErrorEnvelope\` component, its \`error.code\`
narrowed to the codes that status may carry on that operation; each operation's \`default\` response lists what
the HTTP layer may answer on any route before it runs (malformed requests, refused bodies, timeouts). Every
operation has a stable \`operationId\` (\`<feature>-<action>\`). Response headers are declared: \`x-request-id\` on
every response, \`Retry-After\` (seconds) where a code sends it (RATE_LIMITED, CONCURRENCY_LIMIT, QUOTA_EXCEEDED,
RUN_BUSY, IDEMPOTENCY_IN_PROGRESS, DEPLOYMENT_IN_PROGRESS, DATABASE_UNAVAILABLE, LLM_UNAVAILABLE, and a retryable
LLM_PROVIDER_ERROR). A path under another method answers 405 METHOD_NOT_ALLOWED with an \`Allow\` header. The
streaming routes (\`…/run/stream\`) declare \`text/event-stream\` with each event's data schema (\`x-stream-events\`)
and a component of their events (\`AgentRunStreamEvent\`, \`WorkflowRunStreamEvent\`).

Decisions where the specification is silent:
- API keys (\`svc_\` + 43 base64url characters) are accepted as \`Authorization: Bearer <key>\` and as \`x-api-key\`.
- Permissions: every /v1 operation needs one permission, shown as the role of its API-key security requirement
  (and as \`x-permission\`); a key without it answers 403 PERMISSION_DENIED with \`details {required, key, granted}\`.
  An environment's own key holds its environment's permissions: every permission unless an owner or admin tightened
  them (PATCH /dashboard/environments/{id}/permissions), so environment keys keep the specification's full power
  by default. Named keys (POST /dashboard/api-keys, owner/admin) hold a preset or a list within their environment's
  and may expire (401 API_KEY_EXPIRED). Presets: full (everything), read-only (every \`:read\`), run-only
  (intents:run, agents:run, workflows:run, runs:read), ingest-only (knowledge:read, documents:write), deploy
  (evals:read, project:read, project:deploy). Deploying and pruning also obey the tenant's deploy policy. The audit
  log names the key: \`api-key:<name or environment> (<preview>)\`.
- Dashboard JWTs are HS256 with claims sub, tid, role, iat, exp (7 days). Missing token: 401 UNAUTHORIZED;
  bad signature, other algorithm or unknown user: 401 INVALID_TOKEN; expired: 401 TOKEN_EXPIRED. Role
  and tenant state are read on every request, so changes apply at once; a password reset invalidates
  earlier tokens.
- Roles: owner > admin > developer > viewer. A role below a route's minimum: 403 FORBIDDEN.
- Admin routes: missing or wrong X-Admin-Secret: 401 ADMIN_UNAUTHORIZED; no ADMIN_SECRET configured: 403 ADMIN_DISABLED.
- Ten failed logins per e-mail within 15 minutes: 429 RATE_LIMITED with Retry-After.
- \`tenantId\` and \`id\` of a Tenant are the same UUID. Unknown ids and other tenants' ids are 404.
- Lists take \`page\`/\`pageSize\` (default 20, larger than 100 is clamped) or \`limit\`/\`offset\`.
- History lists (agent runs and sessions, workflow runs, dashboard sessions, the audit log, evaluation runs and
  results, deployments, ingestion jobs) also take \`cursor\` and answer \`pagination.next_cursor\` (null on the last
  page) and \`pagination.total_is_exact\`: pass next_cursor back as \`cursor\` (same filters) for the rows after
  that page, in the same order (ties broken by id); every page costs the same however deep. \`page\`/\`pageSize\`
  reach at most 10,000 rows deep (deeper: 400 INVALID_INPUT naming \`page\`); a malformed cursor, or one from
  another list, is 400 INVALID_INPUT naming \`cursor\`. \`total\` counts at most 10,000 rows: past that it is
  10,001 with \`total_is_exact: false\` ("at least").
- An empty body on POST is the same as \`{}\`; unknown body fields are ignored.
- Bodies are limited to BODY_LIMIT_BYTES (default 1 MiB): 413 PAYLOAD_TOO_LARGE; bodies must be
  application/json: 415 UNSUPPORTED_MEDIA_TYPE; malformed JSON: 400 INVALID_JSON.
- The NUL character (U+0000) is refused wherever a request carries text: in a path parameter, a
  query value, or any string or key of a JSON body: 400 INVALID_INPUT with \`details.issues[0].code\`
  \`nul_character\` naming the field.
- JSON bodies nest objects and arrays at most 100 levels deep (the body itself is level 1), on every
  route, checked before the route runs (signed webhook deliveries after their signature): deeper is 400
  INVALID_INPUT with \`details.max_depth\` and \`details.issues[0].code\` \`too_deep\`, its \`path\` naming
  where. Inside a project document (POST /v1/project/plan, /v1/deployments) a resource's values sit 3 to 5
  levels deeper than in the resource's own route, so a value near the limit there cannot be deployed as code.
- Answers the HTTP layer gives before any route runs are envelopes too: a path segment over 500
  characters, 414 URI_TOO_LONG; request line and headers over 16 KiB, 431 HEADERS_TOO_LARGE; a request
  not received within REQUEST_TIMEOUT_MS (default 120 s), 408 REQUEST_TIMEOUT; malformed HTTP, bad
  percent-encoding or a body shorter than its Content-Length, 400 MALFORMED_REQUEST; a known path
  under another method, 405 METHOD_NOT_ALLOWED with an \`Allow\` header and \`details.allowed\`.
- Hiring intents require only the fields they cannot run without, as non-blank text (schema pattern
  \`\\S\`; the issue message is "must not be blank"); there are no minimum lengths. Each intent's input
  schema description says what it needs.
- A prompt template fills \`{{input.path}}\` (own properties only), \`{{context}}\` and \`{{history}}\`;
  a rendered prompt over 2,000,000 characters is 413 PAYLOAD_TOO_LARGE (\`details.max_prompt_chars\`),
  found before the prompt is built.
- Guardrails always redact a nine-digit number the text labels as an SSN, ITIN, TIN, social security
  number or tax id, whatever its area or checksum; unlabelled numbers must be valid SSNs.
- GET /admin/diagnostics answers 200 with \`ok: false\` when a check fails: the body is a report, not
  an error. \`ok\` ignores warnings. Its \`breakers\` list each model provider target's breaker.
- Model providers: every failure of a provider call is a provider failure, never a 500: 502 LLM_PROVIDER_ERROR
  (the specification's code for every such failure, a timeout included) with \`details {provider, model, reason,
  status?, retryable, retry_after_seconds?, attempts}\`; \`reason\` is rate_limited, server_error, timeout,
  connection, truncated (the body stopped mid-answer), invalid_response, stream_cut (a streamed answer cut after its
  first token: never retried), rejected (400/413/422: not retried), unauthorized (401/403) or not_found (404). A
  retryable failure carries Retry-After (the provider's, else 2 s). A call is served by a route: its model, then
  its fallbacks in order (\`execution_config.fallback_models\` of an intent, \`fallback_models\` of an agent or suite,
  else the tenant's \`modelFallbacks\`, else the platform's LLM_FALLBACK_MODELS); a failure another model may cure
  (all but rejected and stream_cut) moves to the next model after LLM_MAX_RETRIES retries of the same one (the
  provider's Retry-After honoured, else jittered exponential backoff; a retry budget per target). Each target
  (provider and credential: the platform's key and each tenant's own key apart) has a breaker shared by every
  process through PostgreSQL: when over half of its last 20 calls failed (at least LLM_BREAKER_MIN_CALLS), it sends
  nothing for LLM_BREAKER_COOLDOWN_MS, then one probe. When every target of a route is cooling down the call
  answers 503 LLM_UNAVAILABLE (\`reason: circuit_open\`) with Retry-After and makes no provider call. Embeddings
  never fall back (another model's vectors do not compare). Usage, cost (at the serving model's price) and
  \`model_used\` name the model that served.
- Agents: the \`free\` plan has none (403 FEATURE_NOT_ENABLED on create, deploy and run). Running an agent
  that is not active: 409 AGENT_NOT_ACTIVE. Deploying an active agent changes nothing; deploying an inactive
  one re-activates it. DELETE answers the agent (now \`inactive\`). \`guardrail_policy_id\` is always null:
  agents use the tenant's guardrails. \`workflow_ids\` takes workflow ids or keys; each deployed, active one is a
  tool \`workflow__<key>\` (a synchronous run). \`action_ids\` and
  \`tools_config.custom_tool_refs\` are stored, not offered to the model. Unknown keys in \`tools_config\`,
  \`memory_config\` and \`behavior_config\`, at any depth, are ignored and not stored, like unknown top-level fields;
  \`behavior_config.planning\` is a boolean or a planning instruction (a non-blank text turns planning on). MCP server \`headers\` are write-only (stored encrypted, shown as \`***\`; \`***\` sent back
  keeps the stored value).
- An agent run answers 200 whatever its status (completed, needs_input, max_steps_reached,
  budget_exhausted, guardrail_blocked, failed, cancelled); \`steps\` counts model calls. The run detail adds
  \`agent_key\`, \`user_id\`, \`model\`, \`input\` (the message as redacted), \`error\`, \`started_at\`,
  \`completed_at\` and \`trace\`. Runs and sessions lists are paginated (\`page\`, \`pageSize\`) with \`pagination\`.
  A session belongs to one end user (\`input.user_id\`): continuing it as another is a 404.
- Workflows: client-chosen step ids of the form ^[A-Za-z][A-Za-z0-9_]{0,63}$ are kept as step ids (templates and
  expressions refer to steps by id); other ids are replaced by generated ones. Every change of the live steps
  (deploy, or PATCH without as_draft) makes a version; runs record it. A workflow's \`has_draft\` and
  \`draft_steps\` show unpublished changes; before the first deploy \`steps\` are the draft. DELETE …/draft on a
  never-deployed workflow is 409 NO_DRAFT. Toggle sets the status label to active or inactive. A run answers 200
  with its status (a failed step without on_failure ends it \`failed\`) and adds \`output\`; a run call with the
  conversation_id of a needs_input run continues it (input.message required). The smallest definition runs: a
  trigger without \`config\` (or without \`trigger_subtype\`) is manual, an \`end\` without \`config.output\` ends
  the run with output null, an \`ai_intent\` step with only \`intent_id\` runs the intent on the run's input. Step
  config keys a step type does not know are dropped when saved, not refused. A \`workflow_key\` made from the name
  never takes a path word under /v1/workflows (\`actions\`, \`approvals\`, \`events\`, \`runs\`) or a UUID's shape:
  it gets \`-workflow\` appended; such a key sent in PATCH is 400 INVALID_INPUT.
- Durable workflow runs: every wait is stored, not slept. approval -> \`awaiting_approval\` with \`approval_id\`
  (POST /v1/workflows/approvals/{approvalId}/decision \`{decision: approve|reject, comment?}\`; reject without
  on_failure ends the run \`rejected\`; a timeout follows on_failure, else fails the step). delay -> \`waiting\` with
  \`resume_at\`, continued by a job. wait_for_callback -> \`waiting\` until a POST to \`{{run.callback_url}}\`
  (/webhooks/workflow-callbacks/<token>; each wait has its own single-use token; a callback that comes before the
  run reaches its wait is kept for it; a second POST is 409 CALLBACK_ALREADY_RECEIVED; the token is verified before
  the body is read (unknown: 404) and bodies are at most 1 MiB (413)). Decisions, callbacks and
  timers continue the run on the job runner. Retry continues a failed run from its failed step (earlier outputs
  reused); cancel stops waiting, awaiting_approval and needs_input runs. A run left running by a process that
  died (no heartbeat for 4 x HEARTBEAT_MS) is continued by another; a step whose result was saved never runs
  again, and http_request steps send \`Idempotency-Key: <run_id>:<step_id>:<step index>[:<loop index>]\` so a
  receiver can drop the repeat of a step that was in flight.
- Triggers: webhook (the first deploy answers \`webhook_url\`, \`webhook_secret\` and \`callback_secret\` once; deliveries are
  Standard Webhooks v1 signed with \`webhook_secret\`, checked before the body is read — unknown slug 404; a missing
  \`webhook-id\`, a \`webhook-timestamp\` outside ±5 minutes or a \`webhook-signature\` without a \`v1,<base64>\` entry: 401
  INVALID_SIGNATURE —, 5-minute window, a repeated \`webhook-id\` answers the first run;
  202 \`{run_id}\`), schedule (\`cron\` with 5 or 6 fields, \`timezone\`; one run per tick across processes, one
  catch-up run after downtime; input \`{scheduled_at, fired_at}\`) and event (POST /v1/events). Runs they start
  (and async runs) execute on the job runner: the job runner of the process that accepted them when it has one
  (up to 5000 waiting there; no job needed), else a job any worker takes. A process stopping gracefully gives
  the runs still waiting in it a job each; one that dies is taken over after its heartbeat timeout. A webhook
  delivery at max_concurrent_runs is 429 (senders retry); an event skips that workflow (\`skipped\`); a
  schedule tick is skipped.
- Idempotency-Key (run, stream, test-run, events): 1-255 printable ASCII, 24 h per tenant and workflow. Runs that
  hold a max_concurrent_runs slot: \`running\` and \`waiting\` (resumes of other waits are not refused). Async runs
  (\`mode: async\`) answer 202; \`callback_url\` receives \`{type: workflow.run.<status>, timestamp, data: <run
  detail>}\` signed with the callback secret (\`whsec_\` + base64 of HMAC-SHA256 keyed with the webhook secret's key bytes
  over \`liya/run-callback/v1\`; never the webhook secret, so a callback replayed to the webhook URL is 401) (webhook-id
  \`msg_run_<run id>_<completed_at ms>\`, one per final result), retried 5 times with backoff; a workflow without a secret
  gets one on its first such run, returned once as \`webhook_secret\` with its \`callback_secret\`.
- Evaluations: datasets (list and create answer \`cases_count\`, the single read adds \`cases\`; import is all or
  nothing and names the failing case indexes in \`details.failed_cases\`; a dataset a suite uses is 409
  DATASET_IN_USE), shared starter templates for the hiring intents (clone copies one into the tenant), suites (one
  intent fixed at creation; \`judge_rubric\`, \`pass_threshold\` 1-5 default 4; at most one custom scorer: a CEL
  expression over {input, output, expected, judge}, or a webhook signed with its write-only secret answering
  {score}). A run is 202 \`pending\`, then \`running\` with \`progress\` and \`stage\` ("case n/total"), on the job
  runner: per case the intent runs for real (\`model\` overrides its model), then the check of expected_output
  (string: substring; object: partial deep equality), the judge (score and four dimensions 1-5, re-asked once;
  a judge answer that still fails marks the case errored and counts in \`judge_failures\`), and the custom scorer.
  A case passes when its check passes and its score reaches pass_threshold. Cases write as they finish, so a run
  interrupted anywhere continues without scoring a case twice. A rate limit or provider outage makes a case wait
  and try again (fewer cases at once; \`stage\` says the run waits) for up to PROVIDER_PATIENCE_MS, after which
  only that case errors with the provider's code and reason. Other platform errors (provider refusing the key, quota
  spent, intent gone) fail the run, as does a job that fails unexpectedly until its retries are used up (INTERNAL_ERROR);
  resume (failed runs only, idempotent) keeps scored cases. compare-models starts both runs or neither. Cancel is cooperative
  (pending, running or failed runs; cases in flight are not written; a cancelled run is answered as it is, a completed
  one is 409 RUN_NOT_CANCELLABLE). Result \`status\`: pending, scored, errored
  or skipped. Judge calls are metered (usage kind \`eval_judge\`, not counted as requests) against the plan's
  monthly judge budget (trial $5, starter $50, pro $500, enterprise unlimited; free has no evaluations): run
  creation over it is 429 EVALS_BUDGET_EXCEEDED; a run that reaches it mid-way stops judging
  (\`judge_cap_reached\`; the rest \`skipped\`) and completes. Run-creating requests: at most 30 a minute per
  tenant (429 RATE_LIMITED, Retry-After), decided under a per-tenant lock in PostgreSQL (exact under a burst). Compare pairs the cases scored in both runs (by dataset case; inline
  cases by position) and reports a seeded percentile bootstrap interval (10,000 resamples) and a two-sided
  Wilcoxon signed-rank p-value (Pratt zeros, continuity correction), overall and per dimension. Pairwise judging
  asks twice per case, in both orders; a win only when both orders agree. Reviews: override needs
  corrected_score; agree and flag take none.
- Outbound HTTP (agent http_get, MCP servers, workflow http_request) dials only global unicast addresses. IPv4-mapped,
  IPv4-compatible, NAT64 and 6to4 forms are judged by the IPv4 address they carry; Teredo is refused. The check happens
  when connecting and after each redirect, unless the operator lists the host in OUTBOUND_ALLOWED_HOSTS; cloud
  metadata addresses stay refused for listed names. Responses are capped in bytes and time (OUTBOUND_MAX_BYTES,
  OUTBOUND_TIMEOUT_MS, head and body); an MCP server past its caps (4 MiB per message or event, 130 s) is left out of
  the run, and the run's trace names the cap. MCP clients and tool lists are kept per tenant.
- Mail (workflow send_email, the agents' send_email tool): each recipient counts toward \`mail_per_day\` (UTC day);
  on plans without \`mail_any_recipient\` (free, trial) mail may go only to the tenant's users with a verified e-mail.
  Subject at most 998 characters, body 256 KiB. The step's output is \`{queued, to, recipients}\`.
- Eval suites: \`custom_scorer_webhook_secret\` is any secret of 8 to 500 characters without control characters,
  checked when saved (400 INVALID_INPUT). A Standard Webhooks secret (\`whsec_\` + base64) signs with its
  base64-decoded bytes (at least 8); any other secret signs with its UTF-8 bytes. Either way the scorer request
  carries \`webhook-signature: v1,<base64 HMAC-SHA256 of "<webhook-id>.<webhook-timestamp>.<body>">\`.
- Eval dataset and suite names are unique in a tenant (case-sensitive, after trimming; projects key them by name):
  creating or renaming into a taken name is 409 DATASET_NAME_TAKEN or SUITE_NAME_TAKEN with \`details.name\`. A
  template clone takes the template's name, or the first free of "<name> (copy)", "<name> (copy 2)", ...
- Key rotations (admin, dashboard, environment) answer \`maskedKey\` beside \`apiKey\` (shown once) and \`apiKeyPreview\`.
- hiring/answer-feedback needs only the answer: \`answer\`, or \`message\` when \`answer\` is absent; \`question\` is optional.
- Deploys as code (tag "Deploys as code"): GET /v1/project exports the tenant's custom domains and intents, prompts
  (every version), collections (metadata and domain attachments), tenant guardrails, deployed workflows, agents, eval
  datasets and suites, matched by key (ids become keys: collection slugs, \`domain/intent\`, workflow keys; datasets
  and suites by name), every field present and sorted, secrets (MCP header values, scorer webhook secrets) as
  \`\${ENV_NAME}\` references. POST /v1/project/plan diffs a project field by field and answers the plan's
  \`digest\`; POST /v1/deployments with that \`plan_digest\` deploys exactly that plan (409 DEPLOYMENT_STALE when the
  server changed since). POST /v1/deployments
  publishes every change in one transaction (a refused change rolls all back), or first runs \`gate\` suites on the
  draft definitions as eval runs; POST /v1/deployments/{id}/publish then publishes only when each passed (completed,
  no errored case, pass rate at least \`min_pass_rate\`, default 1) and the plan still holds (409 GATE_PENDING,
  GATE_FAILED, DEPLOYMENT_STALE). Prompt versions only append; an agent is never removed (prune switches it off);
  prune deletes a collection with its documents. Deployments are kept per tenant and readable by id; they never
  store a secret value (a publish sends the project again; its digest must match).
- Operations: GET /metrics (Prometheus text format) is not part of this API: off unless METRICS_PORT (a listener
  of its own, default 127.0.0.1) or METRICS_TOKEN (Bearer; alone, /metrics on this port) is set. With
  OTEL_EXPORTER_OTLP_ENDPOINT set, a caller's W3C \`traceparent\` is continued and every response belongs to a trace; a
  caller's \`tracestate\` and sampled flag count only from TRACE_TRUSTED_NETWORKS (from others the tracestate is never
  passed on and the server decides what is sampled).`;

export const LIMITS_DESCRIPTION = `## Limits

Every tenant's work is bounded by its plan, checked while the work runs, so one tenant can never
stall or exhaust the server for another. A limit reached inside a workflow run ends it with the
code below in the run's \`error\` (\`{code, limit, max, step_id, message}\`): the run's own limits
(run_steps, run_state_bytes, run_wall_seconds, nesting) end it at once, whatever on_failure says;
a step's limits (step_output_bytes, expressions, mail) fail that step, which on_failure may handle.
A run that runs another (an agent's workflow tool, a workflow's ai_agent step) passes down its
depth, its cost budget (max_cost_usd of the agent at the root), its deadline and its cancellation:
a tool call that times out cancels the workflow it started (\`cancelled\`, RUN_CANCELLED). A run
whose process died while executing it is continued at most ${MAX_RUN_CRASHES} times; the next time it fails with
RUN_CRASHED (retry continues it). Expressions (workflow conditions, switches, loops, eval custom
scorers) run under the plan's expression_ms, and every value they build (string characters, list
elements, map entries, bytes) is checked against expression_result_size before it is built; one
evaluation builds at most 4 times that in all. Templates count the characters and entries they
build, together, against expression_result_size; a value that is exactly one template is not
counted. For an eval scorer a limit reached errors the case. The operator may change any default
with PLAN_LIMITS (JSON per plan). A workflow run's attachments (10 files, 15 MB each, 18 MB in all)
are within reach on every plan: the text read from them is counted apart from run_input_bytes and
run_state_bytes, with its own bound of 18,874,368 characters (18 MiB of text) for all the files
together (413 PAYLOAD_TOO_LARGE with \`details.limit\` attachment_text_chars).

${describePlanLimits()}`;
