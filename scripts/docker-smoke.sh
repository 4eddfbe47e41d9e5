#!/usr/bin/env bash
# End-to-end check of the Docker image (needs Docker, curl and jq; not part of `npm test`):
#
#   1. builds the image (SKIP_BUILD=1 uses an existing one; FEATURES=full the variant with OCR) and
#      prints its size;
#   2. runs it with a fresh named volume and the embedded PostgreSQL, on a free host port, and times
#      the first start until Docker reports it healthy (PostgreSQL initialised, migrations applied);
#   3. signs up a tenant, creates a collection, uploads a document into it and waits for the
#      in-process job runner to ingest it; reads them back, with the admin API and the CLI too;
#      checks the optional features `liya doctor` reports (all but OCR, or all with FEATURES=full)
#      and that /docs serves its interactive page;
#   4. kills the container (SIGKILL: no clean shutdown, PostgreSQL left with a stale pid file),
#      starts it again on the same volume, times it until healthy, and checks that the same
#      credentials read the same data.
#
# The container and the volume are removed on exit, whatever happened.
#
#   scripts/docker-smoke.sh                 # image tag liya:smoke
#   IMAGE=liya:test SKIP_BUILD=1 scripts/docker-smoke.sh
#   FEATURES=full IMAGE=liya:full scripts/docker-smoke.sh
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

IMAGE=${IMAGE:-liya:smoke}
FEATURES=${FEATURES:-default}
NAME="liya-smoke-$$"
VOLUME="$NAME-data"
ADMIN_SECRET="smoke-admin-$(od -An -N12 -tx1 /dev/urandom | tr -d ' \n')"
HEALTH_TIMEOUT_S=${HEALTH_TIMEOUT_S:-180}

for tool in docker curl jq; do
  command -v "$tool" >/dev/null || { echo "docker-smoke: $tool is required" >&2; exit 2; }
done

cleanup() {
  local status=$?
  if [ "$status" -ne 0 ] && docker container inspect "$NAME" >/dev/null 2>&1; then
    echo "--- last container logs ---" >&2
    docker logs --tail 40 "$NAME" >&2 || true
  fi
  docker rm -f "$NAME" >/dev/null 2>&1 || true
  docker volume rm "$VOLUME" >/dev/null 2>&1 || true
  exit "$status"
}
trap cleanup EXIT

step() { printf '\n== %s\n' "$*"; }
fail() { echo "docker-smoke: FAILED: $*" >&2; exit 1; }
now_ms() { date +%s%3N; }
seconds_since() { awk -v a="$1" -v b="$(now_ms)" 'BEGIN { printf "%.1f", (b - a) / 1000 }'; }

BASE_URL=
api() {
  # api METHOD PATH [JSON] [curl options...]: prints the response body, fails on a non-2xx status.
  local method=$1 path=$2 body=${3:-} out status
  shift $(($# < 3 ? $# : 3))
  out=$(mktemp)
  status=$(curl -sS -o "$out" -w '%{http_code}' -X "$method" "$BASE_URL$path" \
    ${body:+-H 'content-type: application/json' --data "$body"} "$@")
  if [ "${status:0:1}" != 2 ]; then
    echo "$method $path -> $status: $(cat "$out")" >&2
    rm -f "$out"
    return 1
  fi
  cat "$out"
  rm -f "$out"
}

# Waits until Docker's healthcheck reports the container healthy; prints the seconds it took since
# $1 (ms) and when /health/ready first answered 200, the check's own interval aside.
wait_healthy() {
  local since=$1 deadline=$(($(now_ms) + HEALTH_TIMEOUT_S * 1000)) ready_at= status running
  while :; do
    read -r status running < <(docker inspect --format '{{if .State.Health}}{{.State.Health.Status}}{{else}}no-healthcheck{{end}} {{.State.Running}}' "$NAME")
    [ "$running" = true ] || fail "the container stopped (status $status)"
    if [ -z "$ready_at" ] && [ -n "$BASE_URL" ] && curl -fsS -o /dev/null --max-time 1 "$BASE_URL/health/ready" 2>/dev/null; then
      ready_at=$(seconds_since "$since")
    fi
    case $status in
      healthy) break ;;
      unhealthy) fail "the container is unhealthy" ;;
    esac
    [ "$(now_ms)" -lt "$deadline" ] || fail "not healthy after ${HEALTH_TIMEOUT_S} s (status $status)"
    sleep 0.2
  done
  HEALTHY_AFTER=$(seconds_since "$since")
  READY_AFTER=${ready_at:-$HEALTHY_AFTER}
}

# The host port Docker chose for the container's port 3000 (it may change at each start).
discover_url() {
  local port
  port=$(docker port "$NAME" 3000/tcp | head -n1 | sed 's/.*://')
  [ -n "$port" ] || fail "no host port for 3000/tcp"
  BASE_URL="http://127.0.0.1:$port"
}

if [ "${SKIP_BUILD:-0}" != 1 ]; then
  step "docker build --build-arg FEATURES=$FEATURES -t $IMAGE"
  started=$(now_ms)
  docker build -q --build-arg FEATURES="$FEATURES" -t "$IMAGE" . >/dev/null
  echo "built in $(seconds_since "$started") s"
fi
IMAGE_SIZE=$(docker image ls --format '{{.Size}}' "$IMAGE" | head -n1)
echo "image $IMAGE: $IMAGE_SIZE"

step "first start: fresh volume $VOLUME, embedded PostgreSQL"
docker volume create "$VOLUME" >/dev/null
started=$(now_ms)
# A short healthcheck interval so the wait measures the start, not the default 30 s interval.
docker run -d --init --name "$NAME" \
  -p 127.0.0.1::3000 -v "$VOLUME:/data" \
  -e ADMIN_SECRET="$ADMIN_SECRET" \
  --health-interval=1s --health-timeout=5s --health-retries=3 --health-start-period=120s \
  "$IMAGE" >/dev/null
discover_url
wait_healthy "$started"
FIRST_HEALTHY=$HEALTHY_AFTER
FIRST_READY=$READY_AFTER
echo "healthy after $FIRST_HEALTHY s (/health/ready 200 after $FIRST_READY s) at $BASE_URL"

step "write: sign up, create a collection, upload a document"
EMAIL="smoke-$$@example.com"
signup=$(api POST /auth/signup "{\"companyName\":\"Smoke Test\",\"email\":\"$EMAIL\",\"password\":\"smoke test password 1\"}")
TOKEN=$(jq -er .data.token <<<"$signup")
API_KEY=$(jq -er .data.apiKey <<<"$signup")
TENANT_ID=$(jq -er .data.tenant.tenantId <<<"$signup")
collection=$(api POST /v1/collections '{"slug":"smoke","label":"Smoke test","domain_keys":["hiring"]}' -H "authorization: Bearer $API_KEY")
COLLECTION_ID=$(jq -er .data.collection.id <<<"$collection")
CONTENT=$(printf '# Leave policy\n\nParental leave lasts sixteen weeks. Written by the Docker smoke test.\n' | base64 | tr -d '\n')
upload=$(api POST /dashboard/documents "{\"name\":\"leave-policy.md\",\"content_base64\":\"$CONTENT\",\"collection_ids\":[\"$COLLECTION_ID\"]}" -H "authorization: Bearer $TOKEN")
JOB_ID=$(jq -er .data.jobId <<<"$upload")
echo "tenant $TENANT_ID, collection $COLLECTION_ID, ingestion job $JOB_ID"

deadline=$(($(now_ms) + 30000))
while :; do
  job_status=$(api GET "/dashboard/ingestion-jobs/$JOB_ID" "" -H "authorization: Bearer $TOKEN" | jq -r .data.job.status)
  case $job_status in
    completed) break ;;
    failed | cancelled) fail "the ingestion job ended $job_status" ;;
  esac
  [ "$(now_ms)" -lt "$deadline" ] || fail "the ingestion job is still $job_status after 30 s"
  sleep 0.2
done
echo "ingestion job completed (the container's job runner)"

# Everything written, as the API key, the dashboard token and the admin secret read it back.
snapshot() {
  jq -S -n \
    --argjson collection "$(api GET "/v1/collections/$COLLECTION_ID" "" -H "authorization: Bearer $API_KEY" | jq .data.collection)" \
    --argjson documents "$(api GET "/v1/documents?collection_id=$COLLECTION_ID" "" -H "authorization: Bearer $API_KEY" | jq .data)" \
    --argjson job "$(api GET "/dashboard/ingestion-jobs/$JOB_ID" "" -H "authorization: Bearer $TOKEN" | jq .data.job)" \
    --argjson tenant "$(api GET "/admin/tenants/$TENANT_ID" "" -H "x-admin-secret: $ADMIN_SECRET" | jq .data.tenant)" \
    '{collection: $collection, documents: $documents, job: $job, tenant: $tenant}'
}
BEFORE=$(snapshot)
jq -e --arg id "$COLLECTION_ID" '.documents.documents | length == 1 and .[0].status == "ready" and .[0].chunks > 0 and .[0].collections[0].id == $id' <<<"$BEFORE" >/dev/null ||
  fail "unexpected documents: $(jq -c .documents <<<"$BEFORE")"
echo "read back: collection $(jq -r .collection.slug <<<"$BEFORE"), document $(jq -r '.documents.documents[0] | "\(.name) (\(.status), \(.chunks) chunk(s))"' <<<"$BEFORE")"

# The CLI inside the image (its remote commands load ink and React), against the same server.
tenants=$(docker exec -e LIYA_ADMIN_SECRET="$ADMIN_SECRET" "$NAME" node bin/liya.mjs tenants list --json)
jq -e --arg id "$TENANT_ID" '[.. | objects | select(.tenantId? == $id)] | length >= 1' <<<"$tenants" >/dev/null ||
  fail "liya tenants list does not show the tenant: $tenants"
echo "liya tenants list (CLI in the container) shows the tenant"

# Deploys as code inside the image: export the tenant (the CLI validates files with the JSON Schema
# the image ships in schema/), then plan the export against the same server: no changes (exit 0).
docker exec -e LIYA_API_KEY="$API_KEY" "$NAME" sh -c 'node bin/liya.mjs export --dir /tmp/project >/dev/null && test -s /tmp/project/liya-project.schema.json && test -s /tmp/project/collections/smoke.yaml && node bin/liya.mjs plan --dir /tmp/project' ||
  fail "liya export, then liya plan of the export, did not find the server unchanged"
echo "liya export and liya plan (CLI in the container): the export plans as no change"

# The optional features the image has, as `liya doctor` in the container reports them: every one
# but OCR, or every one in the full variant. /docs serves the interactive page from its own files.
doctor=$(docker exec -e LIYA_ADMIN_SECRET="$ADMIN_SECRET" "$NAME" node bin/liya.mjs doctor --json) ||
  fail "liya doctor failed: $doctor"
FEATURES_DETAIL=$(jq -er '.checks[] | select(.name == "optional features" and .status == "ok") | .detail' <<<"$doctor") ||
  fail "liya doctor reports no optional features check: $doctor"
if [ "$FEATURES" = full ]; then
  [[ $FEATURES_DETAIL == "all installed: "* ]] || fail "the full image lacks an optional feature: $FEATURES_DETAIL"
else
  [[ $FEATURES_DETAIL == "OCR not installed "*" Installed: embedded PostgreSQL, API reference page, pretty logs. "* ]] ||
    fail "the image should lack OCR only: $FEATURES_DETAIL"
fi
echo "liya doctor: optional features: $FEATURES_DETAIL"
for asset in $(api GET /docs | grep -o '/docs/assets/[a-z.-]*'); do
  curl -fsS -o /dev/null "$BASE_URL$asset" || fail "/docs asset $asset is missing"
done
echo "/docs serves the interactive API reference (its assets answer 200)"

step "docker kill (SIGKILL), then start the same container on the same volume"
docker kill "$NAME" >/dev/null
docker wait "$NAME" >/dev/null
started=$(now_ms)
docker start "$NAME" >/dev/null
discover_url
wait_healthy "$started"
SECOND_HEALTHY=$HEALTHY_AFTER
SECOND_READY=$READY_AFTER
echo "healthy after $SECOND_HEALTHY s (/health/ready 200 after $SECOND_READY s) at $BASE_URL"

step "read again with the same credentials"
AFTER=$(snapshot)
if [ "$BEFORE" != "$AFTER" ]; then
  diff <(echo "$BEFORE") <(echo "$AFTER") >&2 || true
  fail "the data read after the restart differs"
fi
echo "identical: collection, document, ingestion job and tenant (API key, dashboard token and admin secret still valid)"

step "summary"
echo "image:                      $IMAGE $IMAGE_SIZE (FEATURES=$FEATURES)"
echo "first start (initdb):       healthy after $FIRST_HEALTHY s (ready after $FIRST_READY s)"
echo "second start (after kill):  healthy after $SECOND_HEALTHY s (ready after $SECOND_READY s)"
echo "data after kill + restart:  identical"
echo "docker-smoke: OK"
