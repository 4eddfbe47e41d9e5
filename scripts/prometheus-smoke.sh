#!/usr/bin/env bash
# End-to-end check of the metrics with a real Prometheus (needs the `prometheus` binary, curl and
# jq; not part of `npm test`):
#
#   1. starts `liya start` on a temporary embedded PostgreSQL, with metrics on their own listener
#      (METRICS_PORT) behind METRICS_TOKEN;
#   2. runs Prometheus (temporary config and storage) scraping it every second with that token;
#   3. sends some traffic: health probes, a signup, a workflow created, deployed and run, an
#      unknown route;
#   4. asks Prometheus's HTTP API (/api/v1/query) for the series and fails unless they are there.
#
# Both processes and the temporary folder are removed on exit, whatever happened.
#
#   scripts/prometheus-smoke.sh
#   PROMETHEUS=/opt/prometheus/prometheus scripts/prometheus-smoke.sh
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

PROMETHEUS=${PROMETHEUS:-prometheus}
TIMEOUT_S=${TIMEOUT_S:-60}
for tool in "$PROMETHEUS" curl jq; do
  command -v "$tool" >/dev/null || { echo "prometheus-smoke: $tool is required (Debian: apt-get install prometheus curl jq)" >&2; exit 2; }
done

WORK=$(mktemp -d "${TMPDIR:-/tmp}/liya-prom-smoke.XXXXXX")
LIYA_PID=
PROM_PID=
cleanup() {
  local status=$?
  if [ "$status" -ne 0 ]; then
    echo "--- liya output (last 30 lines) ---" >&2
    tail -n 30 "$WORK/liya.log" >&2 2>/dev/null || true
    echo "--- prometheus output (last 15 lines) ---" >&2
    tail -n 15 "$WORK/prometheus.log" >&2 2>/dev/null || true
  fi
  # Only the two processes this script started, by their ids.
  [ -n "$PROM_PID" ] && kill "$PROM_PID" 2>/dev/null && wait "$PROM_PID" 2>/dev/null || true
  if [ -n "$LIYA_PID" ] && kill "$LIYA_PID" 2>/dev/null; then
    # liya stops its embedded PostgreSQL on SIGTERM; give it the time to.
    for _ in $(seq 1 100); do kill -0 "$LIYA_PID" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$LIYA_PID" 2>/dev/null || true
  fi
  rm -rf "$WORK"
  exit "$status"
}
trap cleanup EXIT

step() { printf '\n== %s\n' "$*"; }
fail() { echo "prometheus-smoke: FAILED: $*" >&2; exit 1; }
free_port() { node -e 'const s=require("net").createServer().listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})'; }

PORT=$(free_port)
PG_PORT=$(free_port)
METRICS_PORT=$(free_port)
PROM_PORT=$(free_port)
METRICS_TOKEN="smoke-metrics-$(od -An -N12 -tx1 /dev/urandom | tr -d ' \n')"
ADMIN_SECRET="smoke-admin-$(od -An -N12 -tx1 /dev/urandom | tr -d ' \n')"
BASE_URL="http://127.0.0.1:$PORT"

step "building the current sources (into node_modules/.cache, dist/ is left alone)"
LIYA_DIST=$(node --input-type=module -e 'const m = await import("./scripts/build.mjs"); console.log(m.ensureTestBuild());')
echo "$LIYA_DIST"

step "starting liya on port $PORT (metrics on 127.0.0.1:$METRICS_PORT, with a token)"
LIYA_DIST="$LIYA_DIST" NODE_ENV=production LOG_FORMAT=json LOG_LEVEL=info \
  HOST=127.0.0.1 PORT="$PORT" PG_DATA_DIR="$WORK/pg" PG_PORT="$PG_PORT" ADMIN_SECRET="$ADMIN_SECRET" \
  METRICS_PORT="$METRICS_PORT" METRICS_TOKEN="$METRICS_TOKEN" \
  node bin/liya.mjs start >"$WORK/liya.log" 2>&1 &
LIYA_PID=$!
started=$(date +%s)
until curl -sf "$BASE_URL/health/ready" >/dev/null; do
  kill -0 "$LIYA_PID" 2>/dev/null || fail "liya exited"
  [ $(($(date +%s) - started)) -lt "$TIMEOUT_S" ] || fail "liya not ready within ${TIMEOUT_S}s"
  sleep 0.5
done
echo "ready after $(($(date +%s) - started))s"
jq -c 'select(.msg == "metrics served") | {msg, url, token}' "$WORK/liya.log"
status=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$METRICS_PORT/metrics")
[ "$status" = 401 ] || fail "GET /metrics without the token answered $status, not 401"
status=$(curl -s -o /dev/null -w '%{http_code}' -H "authorization: Bearer $METRICS_TOKEN" "$BASE_URL/metrics")
[ "$status" = 404 ] || fail "the API port answered $status for /metrics, not 404"
echo "401 without the token; 404 on the API port"

step "starting Prometheus on 127.0.0.1:$PROM_PORT (scrape interval 1s)"
printf '%s' "$METRICS_TOKEN" >"$WORK/metrics-token"
cat >"$WORK/prometheus.yml" <<EOF
global:
  scrape_interval: 1s
  evaluation_interval: 1s
scrape_configs:
  - job_name: liya
    authorization:
      type: Bearer
      credentials_file: $WORK/metrics-token
    static_configs:
      - targets: ['127.0.0.1:$METRICS_PORT']
EOF
"$PROMETHEUS" --config.file="$WORK/prometheus.yml" --storage.tsdb.path="$WORK/prom-data" \
  --web.listen-address="127.0.0.1:$PROM_PORT" --log.level=warn >"$WORK/prometheus.log" 2>&1 &
PROM_PID=$!
PROM="http://127.0.0.1:$PROM_PORT"
until curl -sf "$PROM/-/ready" >/dev/null; do
  kill -0 "$PROM_PID" 2>/dev/null || fail "prometheus exited"
  sleep 0.2
done
echo "prometheus ready"

step "traffic: probes, a signup, a workflow run, an unknown route"
api() {
  # api METHOD PATH [JSON] [curl options...]: prints the body, fails on a non-2xx status.
  local method=$1 path=$2 body=${3:-} out code
  shift $(($# < 3 ? $# : 3))
  out=$(mktemp "$WORK/body.XXXXXX")
  code=$(curl -sS -o "$out" -w '%{http_code}' -X "$method" "$BASE_URL$path" ${body:+-H 'content-type: application/json' --data "$body"} "$@")
  [ "${code:0:1}" = 2 ] || fail "$method $path -> $code: $(cat "$out")"
  cat "$out"
}
for _ in $(seq 1 20); do curl -sf "$BASE_URL/health/live" >/dev/null; done
API_KEY=$(api POST /auth/signup '{"companyName":"Smoke Co","email":"smoke@example.com","password":"correct horse battery"}' | jq -r .data.apiKey)
AUTH=(-H "authorization: Bearer $API_KEY")
WF_ID=$(api POST /v1/workflows '{"name":"Echo","steps":[{"id":"start","step_type":"trigger","config":{"trigger_subtype":"manual"}},{"id":"done","step_type":"end","config":{"output":{"echoed":"{{trigger.word}}"}}}]}' "${AUTH[@]}" | jq -r .data.workflow.id)
api POST "/v1/workflows/$WF_ID/deploy" '' "${AUTH[@]}" >/dev/null
for i in 1 2 3; do
  api POST "/v1/workflows/$WF_ID/run" "{\"input\":{\"word\":\"w$i\"}}" "${AUTH[@]}" | jq -c '{status: .data.status, output: .data.output}'
done
api GET /v1/workflows '' "${AUTH[@]}" >/dev/null
curl -s -o /dev/null "$BASE_URL/no/such/route"

step "querying Prometheus (/api/v1/query)"
query() { curl -sfG "$PROM/api/v1/query" --data-urlencode "query=$1"; }
# query EXPRESSION DESCRIPTION JQ_FILTER: waits until the filter holds on the result vector.
expect_series() {
  local expr=$1 what=$2 filter=$3 started result
  started=$(date +%s)
  while :; do
    result=$(query "$expr" || true)
    if [ -n "$result" ] && echo "$result" | jq -e ".data.result | $filter" >/dev/null; then
      printf '%-70s %s\n' "$expr" "$(echo "$result" | jq -c '[.data.result[] | (.metric | del(.__name__, .job, .instance) | to_entries | map("\(.key)=\(.value)") | join(",")) + " => " + .value[1]]')"
      return 0
    fi
    [ $(($(date +%s) - started)) -lt "$TIMEOUT_S" ] || fail "$what: no matching series for $expr within ${TIMEOUT_S}s (last answer: $result)"
    sleep 1
  done
}
expect_series 'up{job="liya"}' 'the target is up' 'any(.value[1] == "1")'
expect_series 'sum by (method, route, status) (liya_http_requests_total{route="/health/live"})' 'health probes counted' 'any(.value[1] | tonumber >= 20)'
expect_series 'sum by (method, route, status) (liya_http_requests_total{route="/v1/workflows/:workflowIdOrKey/run"})' 'workflow runs counted by route template' 'any(.value[1] | tonumber >= 3)'
expect_series 'sum by (route, status) (liya_http_requests_total{status="404"})' 'the unknown route counted as unmatched' 'any(.metric.route == "unmatched")'
expect_series 'liya_runs_total' 'runs counted by kind and outcome' 'any(.metric.kind == "workflow" and .metric.outcome == "completed" and (.value[1] | tonumber) >= 3)'
expect_series 'histogram_quantile(0.9, sum by (le) (liya_http_request_duration_seconds_bucket))' 'a latency quantile computes (since start)' 'length == 1 and .[0].value[1] != "NaN"'
expect_series 'liya_job_queue_jobs{state="ready"}' 'the job queue is read at scrape time' 'length >= 3'
expect_series 'liya_db_pool_connections' 'database pools' 'any(.metric.pool == "orm") and any(.metric.pool == "sql") and any(.metric.pool == "jobs")'
expect_series 'nodejs_eventloop_lag_seconds' 'event-loop lag' 'length == 1'
expect_series 'process_resident_memory_bytes' 'process metrics' 'length == 1'
expect_series 'count({job="liya", tenant_id!=""})' 'no tenant_id label by default' 'length == 0'

step "all series found"
