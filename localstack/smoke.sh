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
set -euo pipefail
# shellcheck source=localstack/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

require curl jq awslocal
localstack_ready

API=$(api_url)
TOOL=${LIFECYCLE_E2E_TOOL:-noop}
ARGS=${LIFECYCLE_E2E_ARGS:-"{}"}
TIMEOUT=${LIFECYCLE_E2E_TIMEOUT:-180}
SESSION=smoke-$(date +%s)-$RANDOM
AGENT=$(id_token "$AGENT_USER")
HUMAN=$(id_token "$HUMAN_USER")
jq -e . >/dev/null <<<"$ARGS" || die "LIFECYCLE_E2E_ARGS is not JSON"

# call METHOD PATH TOKEN [BODY]: prints the body, fails on a non-2xx status.
call() {
	local method=$1 path=$2 token=$3 body=${4:-} out status
	local args=(-sS -X "$method" -o - -w '\n%{http_code}' -H "Authorization: Bearer $token")
	if [ -n "$body" ]; then
		args+=(-H 'Content-Type: application/json' --data "$body")
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
	log "PUT the session policy"
	call PUT "/v1/sessions/$SESSION/policy" "$HUMAN" "$LIFECYCLE_E2E_POLICY" >/dev/null
fi

log "submit $TOOL in session $SESSION"
body=$(jq -nc --arg tool "$TOOL" --argjson args "$ARGS" --arg call "call-$RANDOM" \
	'{tool_call_id: $call, tool: $tool, arguments: $args, interactive: true}')
resp=$(call POST "/v1/sessions/$SESSION/actions" "$AGENT" "$body")
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
	"$(jq -nc --arg d "$digest" '{decision: "approve", args_digest: $d}')" >/dev/null

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
outcome=$(jq -r .outcome <<<"$receipt")
log "receipt: $receipt"
[ "$outcome" = succeeded ] || die "outcome $outcome, want succeeded"

# The execution behind it, named after the action, as Step Functions sees it.
sm=$(output StateMachineArn)
exec_arn="${sm/:stateMachine:/:execution:}:$ACTION"
log "execution $(awslocal stepfunctions describe-execution --execution-arn "$exec_arn" --query status --output text)"
echo "smoke: ok ($ACTION)"
