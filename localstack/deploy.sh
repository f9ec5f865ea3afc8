#!/usr/bin/env bash
# Deploy the lifecycle stack to LocalStack with cdklocal.
#
#   docker compose -f localstack/docker-compose.yml up -d --wait
#   localstack/deploy.sh
#
# Steps: build the function zips (for the host's architecture unless
# LIFECYCLE_LAMBDA_ARCH says otherwise), create a Cognito user pool with an
# agent and a human user of session $LIFECYCLE_E2E_SESSION (custom:role,
# custom:sid; once; ids kept in localstack/.state), take the JWT
# issuer and audience from a real token of that pool, `cdklocal bootstrap`,
# then `cdklocal deploy` as a dev stack (no deletion protection, no reserved
# concurrency) with the outputs written to localstack/.state/outputs.json.
set -euo pipefail
# shellcheck source=localstack/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

require curl jq awslocal go make
mkdir -p "$STATE"
localstack_ready

# cdklocal and the CDK CLI, pinned, under .tools/ (like asl-validator).
CDK_CLI_VERSION=${CDK_CLI_VERSION:-2.1148.1}
CDKLOCAL_VERSION=${CDKLOCAL_VERSION:-3.0.4}
CDKLOCAL=$ROOT/.tools/node/node_modules/.bin/cdklocal
if [ ! -x "$CDKLOCAL" ] || [ ! -f "$ROOT/.tools/node/cdklocal-$CDKLOCAL_VERSION-$CDK_CLI_VERSION.stamp" ]; then
	require npm
	log "installing aws-cdk@$CDK_CLI_VERSION and aws-cdk-local@$CDKLOCAL_VERSION under .tools/node"
	npm install --prefix "$ROOT/.tools/node" --no-save --no-package-lock --no-audit --no-fund \
		"aws-cdk@$CDK_CLI_VERSION" "aws-cdk-local@$CDKLOCAL_VERSION" >&2
	touch "$ROOT/.tools/node/cdklocal-$CDKLOCAL_VERSION-$CDK_CLI_VERSION.stamp"
fi

# A Go bootstrap is native code: it runs only where its architecture runs.
# AWS runs arm64; an x86 host runs arm64 Lambda containers only with QEMU
# binfmt emulation registered, so there the default is x86_64.
arch=${LIFECYCLE_LAMBDA_ARCH:-}
if [ -z "$arch" ]; then
	case $(uname -m) in
	aarch64 | arm64) arch=arm64 ;;
	*) arch=x86_64 ;;
	esac
fi
case $arch in
arm64) goarch=arm64 ;;
x86_64) goarch=amd64 ;;
*) die "LIFECYCLE_LAMBDA_ARCH must be arm64 or x86_64, not $arch" ;;
esac
log "building the functions for linux/$goarch"
(cd "$ROOT" && LIFECYCLE_GOARCH=$goarch make build >&2)

# Cognito: one pool, one app client, two users. The api function reads the
# principal from the verified token's claims (shared/auth.GatewayClaims):
# sub, role or custom:role (agent, human, admin) and sid or custom:sid (the
# session; required but for admin). So the pool declares the custom
# attributes role and sid, and each user carries them; ID tokens include
# them as custom:role and custom:sid.
pool_exists() {
	[ -f "$COGNITO_ENV" ] || return 1
	# shellcheck source=/dev/null
	. "$COGNITO_ENV"
	# A pool made before the custom attributes existed is replaced.
	[ "${SCHEMA:-}" = 2 ] && [ "${POOL_SESSION:-}" = "$SESSION" ] || return 1
	awslocal cognito-idp describe-user-pool --user-pool-id "$POOL_ID" >/dev/null 2>&1
}
if ! pool_exists; then
	log "creating the Cognito user pool (session $SESSION)"
	POOL_ID=$(awslocal cognito-idp create-user-pool --pool-name lifecycle-e2e \
		--schema Name=role,AttributeDataType=String,Mutable=true Name=sid,AttributeDataType=String,Mutable=true \
		--query UserPool.Id --output text)
	CLIENT_ID=$(awslocal cognito-idp create-user-pool-client --user-pool-id "$POOL_ID" \
		--client-name lifecycle-e2e \
		--explicit-auth-flows ALLOW_ADMIN_USER_PASSWORD_AUTH ALLOW_REFRESH_TOKEN_AUTH \
		--query UserPoolClient.ClientId --output text)
	for pair in "$AGENT_USER:agent" "$HUMAN_USER:human"; do
		user=${pair%%:*}
		role=${pair##*:}
		awslocal cognito-idp admin-create-user --user-pool-id "$POOL_ID" --username "$user" \
			--user-attributes "Name=custom:role,Value=$role" "Name=custom:sid,Value=$SESSION" \
			--message-action SUPPRESS >/dev/null
		awslocal cognito-idp admin-set-user-password --user-pool-id "$POOL_ID" --username "$user" \
			--password "$USER_PASSWORD" --permanent
	done
	printf 'POOL_ID=%s\nCLIENT_ID=%s\nSCHEMA=2\nPOOL_SESSION=%s\n' "$POOL_ID" "$CLIENT_ID" "$SESSION" >"$COGNITO_ENV"
fi

# The issuer is whatever this LocalStack writes into its tokens; reading it
# from a token keeps this script independent of LocalStack's URL scheme.
token=$(id_token "$HUMAN_USER")
issuer=$(jwt_claim "$token" iss)
audience=$(jwt_claim "$token" aud)
if [ -z "$issuer" ] || [ -z "$audience" ]; then
	die "cannot read iss/aud from a Cognito token"
fi
log "JWT issuer $issuer, audience $audience"

cd "$ROOT"
account=$(awslocal sts get-caller-identity --query Account --output text)
log "cdklocal bootstrap aws://$account/$AWS_REGION"
"$CDKLOCAL" bootstrap "aws://$account/$AWS_REGION" >&2

log "cdklocal deploy $STACK_NAME"
"$CDKLOCAL" deploy "$STACK_NAME" \
	--require-approval never \
	--outputs-file "$OUTPUTS" \
	--parameters "JwtIssuer=$issuer" \
	--parameters "JwtAudience=$audience" \
	-c "lifecycle:stackName=$STACK_NAME" \
	-c lifecycle:deletionProtection=false \
	-c lifecycle:reservedConcurrency=false \
	-c "lifecycle:architecture=$arch" >&2

log "deployed; outputs in $OUTPUTS"
jq . "$OUTPUTS"
echo "API: $(api_url)"
