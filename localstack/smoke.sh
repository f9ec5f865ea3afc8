#!/usr/bin/env bash
# Smoke test of the deployed LocalStack stack, through its HTTP API:
# submit an action as the agent, approve it as the human, read its receipt.
#
#   localstack/smoke.sh
#
# Environment (all optional):
#   LIFECYCLE_E2E_TOOL     tool to submit (default noop: no side effect, no host worker)
#   LIFECYCLE_E2E_ARGS     its JSON arguments (default {})
#   LIFECYCLE_E2E_POLICY   a policy document PUT to the session first, so that the tool asks
#   LIFECYCLE_E2E_TIMEOUT  seconds to wait for each step (default 180)
#   LIFECYCLE_API_URL, LIFECYCLE_AGENT_TOKEN, LIFECYCLE_HUMAN_TOKEN
#                          another deployment of the API and its tokens (then neither
#                          LocalStack nor awslocal is needed; tests/awsmode runs it so)
#
# The session is the one the agent token names (its custom:sid or sid claim).
set -euo pipefail
# shellcheck source=localstack/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

require curl jq
if [ -z "${LIFECYCLE_AGENT_TOKEN:-}" ] || [ -z "${LIFECYCLE_HUMAN_TOKEN:-}" ]; then
	require awslocal
	localstack_ready
fi

API=$(api_url)
TOOL=${LIFECYCLE_E2E_TOOL:-noop}
ARGS=${LIFECYCLE_E2E_ARGS:-"{}"}
TIMEOUT=${LIFECYCLE_E2E_TIMEOUT:-180}
AGENT=${LIFECYCLE_AGENT_TOKEN:-$(id_token "$AGENT_USER")}
HUMAN=${LIFECYCLE_HUMAN_TOKEN:-$(id_token "$HUMAN_USER")}
SESSION=$(jwt_claim "$AGENT" custom:sid)
[ -n "$SESSION" ] || SESSION=$(jwt_claim "$AGENT" sid)
[ -n "$SESSION" ] || die "the agent token names no session (custom:sid or sid claim)"
jq -e . >/dev/null <<<"$ARGS" || die "LIFECYCLE_E2E_ARGS is not JSON"

# call METHOD PATH TOKEN [BODY [IDEMPOTENCY-KEY]]: prints the body, fails on a
# non-2xx status.
call() {
	local method=$1 path=$2 token=$3 body=${4:-} key=${5:-} out status
	local args=(-sS -X "$method" -o - -w '\n%{http_code}' -H "Authorization: Bearer $token")
	if [ -n "$body" ]; then
		args+=(-H 'Content-Type: application/json' --data "$body")
	fi
	if [ -n "$key" ]; then
		args+=(-H "Idempotency-Key: $key")
	fi
	out=$(curl "${args[@]}" "$API$path") || die "$method $path: curl failed"
	status=${out##*$'\n'}
	out=${out%$'\n'*}
	case $status in
	2??) printf '%s' "$out" ;;
	*) die "$method $path: HTTP $status: $out" ;;
	esac
}

# wait_for WHAT COMMAND...: retries COMMAND every 2 s until it succeeds.
wait_for() {
	local what=$1 deadline=$((SECONDS + TIMEOUT))
	shift
	until "$@"; do
		[ $SECONDS -lt $deadline ] || die "timed out after ${TIMEOUT}s waiting for $what"
		sleep 2
	done
}

# field JSON NAME: the first value named NAME at any depth.
field() {
	jq -r --arg k "$2" 'first(.. | objects | select(has($k)) | .[$k]) // empty' <<<"$1"
}

log "GET /healthz (no token)"
curl -fsS "$API/healthz" >/dev/null || die "/healthz failed"
status=$(curl -s -o /dev/null -w '%{http_code}' "$API/v1/tools")
[ "$status" = 401 ] || die "GET /v1/tools without a token answered $status, want 401"

if [ -n "${LIFECYCLE_E2E_POLICY:-}" ]; then
	jq -e . >/dev/null <<<"$LIFECYCLE_E2E_POLICY" || die "LIFECYCLE_E2E_POLICY is not JSON"
	log "PUT the session policy"
	current=$(call GET "/v1/sessions/$SESSION/policy" "$HUMAN" | jq -r '.version')
	call PUT "/v1/sessions/$SESSION/policy" "$HUMAN" \
		"$(jq -nc --argjson v "$current" --argjson p "$LIFECYCLE_E2E_POLICY" '{expected_version: $v, policy: $p}')" >/dev/null
fi

log "submit $TOOL in session $SESSION"
body=$(jq -nc --arg tool "$TOOL" --argjson args "$ARGS" --arg call "call-$RANDOM" \
	'{tool_call_id: $call, tool: $tool, arguments: $args, interactive: true}')
resp=$(call POST "/v1/sessions/$SESSION/actions" "$AGENT" "$body" "smoke-$(date +%s)-$RANDOM")
ACTION=$(field "$resp" action_id)
[ -n "$ACTION" ] || die "no action_id in $resp"
log "action $ACTION"

action=""
permission_decided() {
	action=$(call GET "/v1/actions/$ACTION" "$AGENT")
	[ -n "$(field "$action" permission)" ]
}
wait_for "a permission decision" permission_decided
permission=$(field "$action" permission)
[ "$permission" = ask ] ||
	die "permission is $permission, want ask: set LIFECYCLE_E2E_TOOL or LIFECYCLE_E2E_POLICY so the action needs approval"

approval="" digest=""
approval_pending() {
	local list
	list=$(call GET "/v1/sessions/$SESSION/approvals" "$HUMAN")
	approval=$(jq -r --arg a "$ACTION" \
		'first(.. | objects | select(.action_id? == $a and .status? == "pending")) | .approval_id // empty' <<<"$list")
	digest=$(jq -r --arg a "$ACTION" \
		'first(.. | objects | select(.action_id? == $a and .status? == "pending")) | .args_digest // empty' <<<"$list")
	[ -n "$approval" ]
}
wait_for "the pending approval" approval_pending
log "approve $approval"
call POST "/v1/approvals/$approval" "$HUMAN" \
	"$(jq -nc --arg d "$digest" '{decision: "approve", digest: $d}')" >/dev/null

recorded() {
	action=$(call GET "/v1/actions/$ACTION" "$AGENT")
	case $(field "$action" delivery) in
	recorded | projected) return 0 ;;
	*) return 1 ;;
	esac
}
wait_for "the receipt" recorded
receipt=$(jq -c 'first(.. | objects | select(has("receipt")) | .receipt) // empty' <<<"$action")
[ -n "$receipt" ] || die "no receipt in $action"
outcome=$(field "$receipt" outcome)
log "receipt: $receipt"
[ "$outcome" = succeeded ] || die "outcome $outcome, want succeeded"

# The execution behind it, named after the action, as Step Functions sees it.
if [ -f "$OUTPUTS" ] && command -v awslocal >/dev/null 2>&1; then
	sm=$(output StateMachineArn)
	exec_arn="${sm/:stateMachine:/:execution:}:$ACTION"
	log "execution $(awslocal stepfunctions describe-execution --execution-arn "$exec_arn" --query status --output text)"
fi
echo "smoke: ok ($ACTION)"
