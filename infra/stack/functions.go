package stack

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"
)

// Function names: functions/<name>/main.go, build/<name>.zip.
const (
	FnAuthorize = "authorize"
	FnApproval  = "approval"
	FnDispatch  = "dispatch"
	FnRecord    = "record"
	FnProject   = "project"
	FnAPI       = "api"
	FnRecover   = "recover"
)

// Functions lists every function of the stack in build order.
var Functions = []string{FnAuthorize, FnApproval, FnDispatch, FnRecord, FnProject, FnAPI, FnRecover}

// Environment variable names the functions read.
const (
	EnvTable           = "LIFECYCLE_TABLE"
	EnvBlobBucket      = "LIFECYCLE_BLOB_BUCKET"
	EnvEventBus        = "LIFECYCLE_EVENT_BUS"
	EnvStateMachineARN = "LIFECYCLE_STATE_MACHINE_ARN"
	// EnvStateMachineAliasARN is the `live` alias new actions start on;
	// EnvStateMachineVersionARN the version it points at in this deployment.
	EnvStateMachineAliasARN   = "LIFECYCLE_STATE_MACHINE_ALIAS_ARN"
	EnvStateMachineVersionARN = "LIFECYCLE_STATE_MACHINE_VERSION_ARN"
	EnvLogLevel               = "LIFECYCLE_LOG_LEVEL"
	EnvJWTIssuer              = "LIFECYCLE_JWT_ISSUER"
	EnvJWTAudience            = "LIFECYCLE_JWT_AUDIENCE"
	EnvReviewer               = "LIFECYCLE_REVIEWER"
	EnvBedrockModelID         = "LIFECYCLE_BEDROCK_MODEL_ID"
	EnvToolFunctionARNs       = "LIFECYCLE_TOOL_FUNCTION_ARNS"
	// EnvLogGroups (api function): "function=log-group-name,...", every
	// function's log group and the state machine's ("states"), for the
	// links of an action to the CloudWatch console.
	EnvLogGroups = "LIFECYCLE_LOG_GROUPS"
	// EnvAuditAnchorBucket (recover, with lifecycle:auditAnchor) is the
	// Object Lock bucket of decision log anchors.
	EnvAuditAnchorBucket = "LIFECYCLE_AUDIT_ANCHOR_BUCKET"
	// EnvHostHome (api, with lifecycle:hostHome) is the host workers' home
	// directory, under which a policy may not open a credential store.
	EnvHostHome = "LIFECYCLE_HOST_HOME"
)

// functionSpec is the sizing of one function. Each number carries its reason.
type functionSpec struct {
	name string
	// timeoutSeconds bounds one invocation.
	timeoutSeconds float64
	memoryMB       float64
	// reserved is both a guarantee and a cap: it keeps a burst of one kind
	// of work from starving the others and bounds what a runaway loop can
	// spend. 162 in total, so the account needs a limit of at least 262
	// (Lambda keeps 100 unreserved); see Config.ReservedConcurrency.
	reserved float64
}

var functionSpecs = map[string]functionSpec{
	// The builtin reviewer is fast; the Bedrock reviewer is one model call,
	// well under 30 s for a bounded prompt. A timeout is a reviewer failure,
	// which never executes the action.
	FnAuthorize: {name: FnAuthorize, timeoutSeconds: 30, memoryMB: 256, reserved: 20},
	// Stores the task token on the approval item: one conditional write.
	FnApproval: {name: FnApproval, timeoutSeconds: 10, memoryMB: 128, reserved: 10},
	// Synchronous executors (lambda and http tools) run inside this
	// invocation, so the timeout is the longest tool call we wait for. It
	// stays a minute under the ASL's DispatchSync TimeoutSeconds (900): the
	// function must end (and report) before the state times out, or Step
	// Functions moves on while the tool call may still be running.
	// Host tools do not wait here: dispatch publishes them with a task token.
	FnDispatch: {name: FnDispatch, timeoutSeconds: 840, memoryMB: 256, reserved: 50},
	// Receipt put-once, the checkpoint and projection transaction, one
	// PutEvents, and an S3 put for large results.
	FnRecord: {name: FnRecord, timeoutSeconds: 30, memoryMB: 256, reserved: 20},
	// Retired (retiredFunctions): only state machine versions of earlier
	// revisions invoke it. Projection writes and one PutEvents.
	FnProject: {name: FnProject, timeoutSeconds: 30, memoryMB: 256, reserved: 20},
	// 29 s is the HTTP API's integration limit; a longer timeout would only
	// keep working after the client already got a 503. Host long-polls must
	// return before it.
	FnAPI: {name: FnAPI, timeoutSeconds: 29, memoryMB: 256, reserved: 40},
	// A sweep must end before the next one-minute tick. Two at a time: one
	// scheduled sweep and one reaction to a failed execution; sweeps are
	// idempotent (conditional writes, leases), so overlap is safe, only waste.
	FnRecover: {name: FnRecover, timeoutSeconds: 55, memoryMB: 256, reserved: 2},
}

// titleCase makes construct ids: "authorize" -> "Authorize", "api" -> "Api".
func titleCase(s string) string {
	return strings.ToUpper(s[:1]) + s[1:]
}

// FunctionDescription is the Description of a function's resource; tests
// find functions by it.
func FunctionDescription(name string) string {
	return "OpenProgram action lifecycle: " + name
}

// CheckAssets fails fast, before any construct exists, when a zip is missing.
func CheckAssets(dir string) error {
	var missing []string
	for _, name := range Functions {
		p := filepath.Join(dir, name+".zip")
		st, err := os.Stat(p)
		if err != nil || st.IsDir() {
			missing = append(missing, p)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("function zips missing (run `make build`, or set %s / -c %s): %s",
			EnvAssetDir, CtxAssetDir, strings.Join(missing, ", "))
	}
	return nil
}

// lambdaFunction is one function with its own role and log group. The role
// starts empty: no AWSLambdaBasicExecutionRole (whose logs grant is on "*"),
// only write access to the function's own log group.
type lambdaFunction struct {
	fn   awslambda.Function
	role awsiam.Role
	// version and alias exist for the functions the state machine invokes
	// (publishVersion): the version this deployment published and the
	// `live` alias pointing at it.
	version awslambda.IVersion
	alias   awslambda.Alias
	logs    awslogs.LogGroup
}

// publishVersion publishes the function's current code and configuration
// as a Lambda version (a new one exactly when they changed) and points its
// `live` alias at it. The state machine definition names the version, not
// the function or the alias: so a deployment that changes handler code
// changes the definition, publishes a new state machine version, and
// executions started on an older one keep invoking the code they started
// with (keep_original). Versions are retained on replacement, so no
// deployment removes code an open execution may still call.
func publishVersion(scope constructs.Construct, f *lambdaFunction, name string) {
	f.version = f.fn.CurrentVersion()
	f.alias = awslambda.NewAlias(scope, jsii.String(titleCase(name)+"LiveAlias"), &awslambda.AliasProps{
		AliasName:   jsii.String(AliasName),
		Version:     f.version,
		Description: jsii.String("The version of " + name + " the live state machine version invokes"),
	})
}

func newFunction(scope constructs.Construct, cfg Config, spec functionSpec, env map[string]string, extra func(*awslambda.FunctionProps)) lambdaFunction {
	id := titleCase(spec.name)
	role := awsiam.NewRole(scope, jsii.String(id+"Role"), &awsiam.RoleProps{
		AssumedBy:   awsiam.NewServicePrincipal(jsii.String("lambda.amazonaws.com"), nil),
		Description: jsii.String("Execution role of the lifecycle " + spec.name + " function"),
	})
	logs := awslogs.NewLogGroup(scope, jsii.String(id+"Logs"), &awslogs.LogGroupProps{
		Retention:     awslogs.RetentionDays_ONE_MONTH,
		RemovalPolicy: removalPolicy(cfg),
	})
	logs.GrantWrite(role)

	vars := map[string]*string{}
	for k, v := range env {
		vars[k] = jsii.String(v)
	}
	props := &awslambda.FunctionProps{
		Description:  jsii.String(FunctionDescription(spec.name)),
		Runtime:      awslambda.Runtime_PROVIDED_AL2023(),
		Architecture: architecture(cfg.Architecture),
		Handler:      jsii.String("bootstrap"),
		Code:         awslambda.Code_FromAsset(jsii.String(filepath.Join(cfg.AssetDir, spec.name+".zip")), nil),
		Role:         role,
		Timeout:      awscdk.Duration_Seconds(jsii.Number(spec.timeoutSeconds)),
		MemorySize:   jsii.Number(spec.memoryMB),
		Environment:  &vars,
		LogGroup:     logs,
		// JSON logs: slog's JSON lines stay structured, and Lambda filters
		// them by level before they are billed.
		LoggingFormat:         awslambda.LoggingFormat_JSON,
		ApplicationLogLevelV2: applicationLogLevel(cfg.LogLevel),
		SystemLogLevelV2:      awslambda.SystemLogLevel_WARN,
		Tracing:               awslambda.Tracing_ACTIVE,
	}
	if cfg.ReservedConcurrency {
		props.ReservedConcurrentExecutions = jsii.Number(spec.reserved)
	}
	// A version, once published, is kept when a later deployment replaces
	// it (see publishVersion).
	props.CurrentVersionOptions = &awslambda.VersionOptions{RemovalPolicy: awscdk.RemovalPolicy_RETAIN}
	if extra != nil {
		extra(props)
	}
	fn := awslambda.NewFunction(scope, jsii.String(id+"Function"), props)
	return lambdaFunction{fn: fn, role: role, logs: logs}
}

func architecture(name string) awslambda.Architecture {
	if name == ArchX86_64 {
		return awslambda.Architecture_X86_64()
	}
	return awslambda.Architecture_ARM_64()
}

func applicationLogLevel(level string) awslambda.ApplicationLogLevel {
	switch level {
	case "debug":
		return awslambda.ApplicationLogLevel_DEBUG
	case "warn":
		return awslambda.ApplicationLogLevel_WARN
	case "error":
		return awslambda.ApplicationLogLevel_ERROR
	default:
		return awslambda.ApplicationLogLevel_INFO
	}
}

func removalPolicy(cfg Config) awscdk.RemovalPolicy {
	if cfg.DeletionProtection {
		return awscdk.RemovalPolicy_RETAIN
	}
	return awscdk.RemovalPolicy_DESTROY
}
