# shellcheck shell=bash
# shellcheck disable=SC2034 # the settings are read by the scripts that source this
# Shared by deploy.sh and smoke.sh: settings, tool checks, Cognito tokens.
# Sourced, never run.

# The repository root (the directory holding cdk.json).
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
STATE=${LIFECYCLE_LOCALSTACK_STATE:-$ROOT/localstack/.state}
OUTPUTS=$STATE/outputs.json
COGNITO_ENV=$STATE/cognito.env

export AWS_REGION=${AWS_REGION:-us-east-1}
export AWS_DEFAULT_REGION=$AWS_REGION
# LocalStack accepts any credentials; account 000000000000 is its default.
export AWS_ACCESS_KEY_ID=${AWS_ACCESS_KEY_ID:-test}
export AWS_SECRET_ACCESS_KEY=${AWS_SECRET_ACCESS_KEY:-test}
export AWS_ENDPOINT_URL=${AWS_ENDPOINT_URL:-http://localhost.localstack.cloud:4566}
STACK_NAME=${LIFECYCLE_STACK_NAME:-Lifecycle}
# Two users: an agent submits, a human of the session approves. The api
# function reads the principal from the token: custom:role (agent, human)
# and custom:sid (the session both users belong to; smoke.sh uses it).
SESSION=${LIFECYCLE_E2E_SESSION:-ses_smoke}
AGENT_USER=${LIFECYCLE_AGENT_USER:-e2e-agent}
HUMAN_USER=${LIFECYCLE_HUMAN_USER:-e2e-human}
USER_PASSWORD=${LIFECYCLE_USER_PASSWORD:-Lifecycle-e2e-1}

die() {
	echo "localstack: $*" >&2
	exit 1
}

log() {
	echo "==> $*" >&2
}

require() {
	local tool
	for tool in "$@"; do
		command -v "$tool" >/dev/null 2>&1 || die "$tool is not installed (see localstack/README.md, Requirements)"
	done
}

# localstack_ready fails unless LocalStack answers as a Pro edition; it warns
# about a service the stack needs that reports itself unusable.
localstack_ready() {
	local health edition svc state
	health=$(curl -fsS "$AWS_ENDPOINT_URL/_localstack/health") ||
		die "LocalStack does not answer at $AWS_ENDPOINT_URL (docker compose -f localstack/docker-compose.yml up -d --wait)"
	edition=$(jq -r '.edition // "unknown"' <<<"$health")
	case $edition in
	pro | enterprise) ;;
	*) die "LocalStack edition is $edition: HTTP APIs, JWT authorizers and Cognito need Pro (set LOCALSTACK_AUTH_TOKEN)" ;;
	esac
	for svc in apigateway cloudformation cognito-idp dynamodb events lambda s3 sqs stepfunctions; do
		state=$(jq -r --arg s "$svc" '.services[$s] // "unlisted"' <<<"$health")
		case $state in
		available | running | unlisted) ;;
		*) echo "localstack: warning: service $svc is $state" >&2 ;;
		esac
	done
}

# jwt_claim TOKEN CLAIM prints one claim of a JWT's payload (no verification:
# the token comes straight from our own Cognito pool).
jwt_claim() {
	local payload
	payload=$(cut -d. -f2 <<<"$1" | tr '_-' '/+')
	while [ $((${#payload} % 4)) -ne 0 ]; do payload="$payload="; done
	base64 -d <<<"$payload" 2>/dev/null | jq -r --arg c "$2" '.[$c] // empty | if type == "array" then join(",") else . end'
}

# id_token USER prints a fresh Cognito ID token for USER.
id_token() {
	# shellcheck source=/dev/null
	. "$COGNITO_ENV"
	awslocal cognito-idp admin-initiate-auth \
		--user-pool-id "$POOL_ID" --client-id "$CLIENT_ID" \
		--auth-flow ADMIN_USER_PASSWORD_AUTH \
		--auth-parameters "USERNAME=$1,PASSWORD=$USER_PASSWORD" \
		--query AuthenticationResult.IdToken --output text
}

# output NAME prints one stack output from the deploy's outputs file.
output() {
	[ -f "$OUTPUTS" ] || die "no $OUTPUTS: run localstack/deploy.sh first"
	jq -er --arg s "$STACK_NAME" --arg o "$1" '.[$s][$o]' "$OUTPUTS" ||
		die "output $1 of stack $STACK_NAME not in $OUTPUTS"
}

# api_url prints the HTTP API's LocalStack URL. CloudFormation's ApiUrl
# output names the AWS host (<id>.execute-api.<region>.amazonaws.com);
# LocalStack serves the same API at <id>.execute-api.localhost.localstack.cloud.
# LIFECYCLE_API_URL overrides it.
api_url() {
	local url id
	if [ -n "${LIFECYCLE_API_URL:-}" ]; then
		echo "${LIFECYCLE_API_URL%/}"
		return
	fi
	url=$(output ApiUrl)
	id=${url#*://}
	id=${id%%.*}
	echo "http://$id.execute-api.localhost.localstack.cloud:4566"
}
