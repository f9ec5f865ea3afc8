package stack

import (
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsdynamodb"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsevents"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awss3"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"
)

// Props configures New.
type Props struct {
	awscdk.StackProps
	Config Config
}

// Output names of the stack (`cdk deploy --outputs-file` keys).
const (
	OutputAPIURL                 = "ApiUrl"
	OutputTableName              = "TableName"
	OutputStateMachineARN        = "StateMachineArn"
	OutputStateMachineAliasARN   = "StateMachineAliasArn"
	OutputStateMachineVersionARN = "StateMachineVersionArn"
	OutputEventBusName           = "EventBusName"
	OutputBlobBucketName         = "BlobBucketName"
	// OutputAuditAnchorBucketName exists with lifecycle:auditAnchor.
	OutputAuditAnchorBucketName = "AuditAnchorBucketName"
)

// Table key and index names shared with the DynamoDB store adapter.
const (
	TableTTLAttribute = "expires_at"
	GSI1Name          = "gsi1"
	GSI2Name          = "gsi2"
)

// New builds the lifecycle stack. It validates everything it can before the
// first construct exists, so a bad config or a missing zip is one clear
// error instead of a jsii stack trace.
func New(scope constructs.Construct, id string, props Props) (awscdk.Stack, error) {
	cfg := props.Config
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if err := CheckAssets(cfg.AssetDir); err != nil {
		return nil, err
	}
	def, err := LoadDefinition(cfg.DefinitionFile)
	if err != nil {
		return nil, err
	}

	st := awscdk.NewStack(scope, jsii.String(id), &props.StackProps)
	issuer, audience := jwtParameters(st, cfg)

	table := newTable(st, cfg)
	bucket := newBucket(st, cfg)
	// Projection events for subscribers go to their own bus, so a consumer's
	// rule never sees (or is billed for) unrelated default-bus traffic.
	bus := awsevents.NewEventBus(st, jsii.String("ProjectionBus"), &awsevents.EventBusProps{
		Description: jsii.String("Lifecycle projection events (published by the project function)"),
	})
	dlq := newDeadLetterQueue(st)

	// Every function gets the common variables, so a shared config loader
	// that insists on them never fails on a function that does not use one.
	env := func(extra map[string]string) map[string]string {
		m := map[string]string{
			EnvTable:      *table.TableName(),
			EnvBlobBucket: *bucket.BucketName(),
			EnvEventBus:   *bus.EventBusName(),
			EnvLogLevel:   cfg.LogLevel,
		}
		for k, v := range extra {
			m[k] = v
		}
		return m
	}

	fns := map[string]lambdaFunction{}

	// The tool Lambdas are routed (an executor exists for them) wherever a
	// permission is decided or the tool catalog is listed, not only where
	// they are invoked: authorize without them denies every tool Lambda
	// (no_executor), and the api lists none. Only dispatch may invoke them.
	tools := strings.Join(cfg.ToolFunctionARNs, ",")
	authorizeEnv := map[string]string{EnvReviewer: cfg.Reviewer, EnvToolFunctionARNs: tools}
	if cfg.Reviewer == ReviewerBedrock {
		authorizeEnv[EnvBedrockModelID] = cfg.BedrockModelID
	}
	fns[FnAuthorize] = newFunction(st, cfg, functionSpecs[FnAuthorize], env(authorizeEnv), nil)
	grantTable(fns[FnAuthorize].role, table)
	if cfg.Reviewer == ReviewerBedrock {
		model := st.FormatArn(&awscdk.ArnComponents{
			Service:      jsii.String("bedrock"),
			Account:      jsii.String(""), // foundation models are not owned by an account
			Resource:     jsii.String("foundation-model"),
			ResourceName: jsii.String(cfg.BedrockModelID),
			ArnFormat:    awscdk.ArnFormat_SLASH_RESOURCE_NAME,
		})
		fns[FnAuthorize].role.AddToPrincipalPolicy(statement([]string{"bedrock:InvokeModel"}, model))
	}

	fns[FnApproval] = newFunction(st, cfg, functionSpecs[FnApproval], env(nil), nil)
	grantTable(fns[FnApproval].role, table)

	fns[FnDispatch] = newFunction(st, cfg, functionSpecs[FnDispatch],
		env(map[string]string{EnvToolFunctionARNs: tools}), nil)
	grantTable(fns[FnDispatch].role, table)
	grantObjects(fns[FnDispatch].role, bucket, "s3:PutObject")
	// A DispatchHost wait published again over a started task (its worker
	// missed the heartbeat) is answered at once, unknown, by dispatch.
	fns[FnDispatch].role.AddToPrincipalPolicy(statement([]string{"states:SendTaskSuccess"}, jsii.String("*")))
	if len(cfg.ToolFunctionARNs) > 0 {
		var tools []*string
		for _, arn := range cfg.ToolFunctionARNs {
			// The function and its versions/aliases; nothing else.
			tools = append(tools, jsii.String(arn), jsii.String(arn+":*"))
		}
		fns[FnDispatch].role.AddToPrincipalPolicy(statement([]string{"lambda:InvokeFunction"}, tools...))
	}

	fns[FnRecord] = newFunction(st, cfg, functionSpecs[FnRecord], env(nil), nil)
	grantTable(fns[FnRecord].role, table)
	grantObjects(fns[FnRecord].role, bucket, "s3:GetObject", "s3:PutObject")
	// The record step projects and publishes the action.projected event.
	fns[FnRecord].role.AddToPrincipalPolicy(statement([]string{"events:PutEvents"}, bus.EventBusArn()))

	fns[FnProject] = newFunction(st, cfg, functionSpecs[FnProject], env(nil), nil)
	grantTable(fns[FnProject].role, table)
	fns[FnProject].role.AddToPrincipalPolicy(statement([]string{"events:PutEvents"}, bus.EventBusArn()))

	for _, p := range def.Placeholders {
		name := substitutionFunctions[p]
		if fns[name].version == nil {
			f := fns[name]
			publishVersion(st, &f, name)
			fns[name] = f
		}
	}
	machine := newStateMachine(st, cfg, def, fns)

	// The API and the recover function start an action on the `live`
	// alias, or on the version its execution recorded (keep_original): any
	// version or alias of this machine ("<arn>:*"), and nothing else.
	apiEnv := map[string]string{
		EnvStateMachineARN:        *machine.sm.StateMachineArn(),
		EnvStateMachineAliasARN:   *machine.aliasARN,
		EnvStateMachineVersionARN: *machine.versionARN,
		EnvJWTIssuer:              *issuer,
		EnvJWTAudience:            *audience,
		EnvToolFunctionARNs:       tools,
	}
	if cfg.HostHome != "" {
		apiEnv[EnvHostHome] = cfg.HostHome
	}
	fns[FnAPI] = newFunction(st, cfg, functionSpecs[FnAPI], env(apiEnv), nil)
	grantTable(fns[FnAPI].role, table)
	fns[FnAPI].role.AddToPrincipalPolicy(statement([]string{"states:StartExecution", "states:DescribeStateMachine"}, machine.sm.StateMachineArn(), machine.qualifiedARN))
	fns[FnAPI].role.AddToPrincipalPolicy(statement(
		[]string{"states:DescribeExecution", "states:GetExecutionHistory", "states:StopExecution",
			// GET /v1/actions/{id}/machine: the definition an execution runs.
			"states:DescribeStateMachineForExecution"}, machine.executionsARN))
	fns[FnAPI].role.AddToPrincipalPolicy(statement(sendTaskActions, jsii.String("*")))
	grantObjects(fns[FnAPI].role, bucket, "s3:GetObject")

	// An action's links name the log groups of the functions it passed
	// through and of the state machine (the api's own is known only now).
	var groups []*string
	for _, name := range []string{FnAuthorize, FnApproval, FnDispatch, FnRecord, FnProject, FnAPI} {
		groups = append(groups, awscdk.Fn_Join(jsii.String(""), &[]*string{jsii.String(name + "="), fns[name].logs.LogGroupName()}))
	}
	groups = append(groups, awscdk.Fn_Join(jsii.String(""), &[]*string{jsii.String("states="), machine.logs.LogGroupName()}))
	fns[FnAPI].fn.AddEnvironment(jsii.String(EnvLogGroups), awscdk.Fn_Join(jsii.String(","), &groups), nil)

	recoverEnv := map[string]string{
		EnvStateMachineARN:        *machine.sm.StateMachineArn(),
		EnvStateMachineAliasARN:   *machine.aliasARN,
		EnvStateMachineVersionARN: *machine.versionARN,
	}
	var anchors awss3.Bucket
	if cfg.AuditAnchor {
		anchors = newAnchorBucket(st, cfg)
		recoverEnv[EnvAuditAnchorBucket] = *anchors.BucketName()
	}
	fns[FnRecover] = newFunction(st, cfg, functionSpecs[FnRecover], env(recoverEnv), func(p *awslambda.FunctionProps) {
		// recover is the one function invoked asynchronously (EventBridge):
		// two retries, then the event goes to the dead-letter queue rather
		// than vanishing. An hour-old sweep trigger is still worth running
		// (sweeps are idempotent); older ones are superseded by the schedule.
		p.DeadLetterQueue = dlq
		p.RetryAttempts = jsii.Number(2)
		p.MaxEventAge = awscdk.Duration_Hours(jsii.Number(1))
	})
	grantTable(fns[FnRecover].role, table)
	fns[FnRecover].role.AddToPrincipalPolicy(statement([]string{"states:StartExecution", "states:DescribeStateMachine"}, machine.sm.StateMachineArn(), machine.qualifiedARN))
	fns[FnRecover].role.AddToPrincipalPolicy(statement(
		[]string{"states:DescribeExecution", "states:StopExecution"}, machine.executionsARN))
	fns[FnRecover].role.AddToPrincipalPolicy(statement([]string{"events:PutEvents"}, bus.EventBusArn()))
	// The sweeper re-sends approval decisions and host results whose
	// SendTask* was lost, and fails the waits of a cancelled execution.
	fns[FnRecover].role.AddToPrincipalPolicy(statement([]string{"states:SendTaskSuccess", "states:SendTaskFailure"}, jsii.String("*")))
	if anchors != nil {
		// Put and read anchors; never delete (Object Lock would refuse it
		// anyway within the retention) nor change the bucket's lock.
		grantObjects(fns[FnRecover].role, anchors, "s3:PutObject", "s3:GetObject")
	}

	api := newHTTPAPI(st, cfg, fns[FnAPI].fn, issuer, audience)
	newRecoverRules(st, fns[FnRecover].fn, machine.sm, dlq)
	newAlarms(st, cfg, machine.sm, dlq)

	out := func(name string, value *string, desc string) {
		awscdk.NewCfnOutput(st, jsii.String(name), &awscdk.CfnOutputProps{Value: value, Description: jsii.String(desc)})
	}
	out(OutputAPIURL, api.url, "Base URL of the HTTP API (JWT-protected except GET /healthz)")
	out(OutputTableName, table.TableName(), "DynamoDB table of the lifecycle store")
	out(OutputStateMachineARN, machine.sm.StateMachineArn(), "Action lifecycle state machine (Standard)")
	out(OutputStateMachineAliasARN, machine.aliasARN, "The 'live' alias of the published state machine version")
	out(OutputStateMachineVersionARN, machine.versionARN, "The state machine version this deployment published (the alias points at it)")
	out(OutputEventBusName, bus.EventBusName(), "EventBridge bus carrying projection events")
	out(OutputBlobBucketName, bucket.BucketName(), "S3 bucket for result blobs over the item-size budget")
	if anchors != nil {
		out(OutputAuditAnchorBucketName, anchors.BucketName(), "S3 Object Lock bucket of decision log anchors (heads/<time>.json)")
	}
	return st, nil
}

// jwtParameters declares the issuer and audience of the JWT authorizer as
// stack parameters; context values become their defaults. Without either,
// `cdk deploy --parameters JwtIssuer=... --parameters JwtAudience=...` is
// required, which is deliberate: there is no safe default identity provider.
func jwtParameters(st awscdk.Stack, cfg Config) (issuer, audience *string) {
	ip := &awscdk.CfnParameterProps{
		Type:           jsii.String("String"),
		Description:    jsii.String("JWT issuer URL (iss claim) accepted by the HTTP API, e.g. https://cognito-idp.<region>.amazonaws.com/<pool-id>"),
		AllowedPattern: jsii.String(`^https?://\S+$`),
	}
	if cfg.JWTIssuer != "" {
		ip.Default = jsii.String(cfg.JWTIssuer)
	}
	ap := &awscdk.CfnParameterProps{
		Type:           jsii.String("String"),
		Description:    jsii.String("Comma-separated JWT audiences (aud claim or Cognito client ids) accepted by the HTTP API"),
		AllowedPattern: jsii.String(`^[^,\s]+(,[^,\s]+)*$`),
	}
	if cfg.JWTAudience != "" {
		ap.Default = jsii.String(cfg.JWTAudience)
	}
	return awscdk.NewCfnParameter(st, jsii.String("JwtIssuer"), ip).ValueAsString(),
		awscdk.NewCfnParameter(st, jsii.String("JwtAudience"), ap).ValueAsString()
}

func newTable(st awscdk.Stack, cfg Config) awsdynamodb.Table {
	str := func(name string) *awsdynamodb.Attribute {
		return &awsdynamodb.Attribute{Name: jsii.String(name), Type: awsdynamodb.AttributeType_STRING}
	}
	table := awsdynamodb.NewTable(st, jsii.String("Table"), &awsdynamodb.TableProps{
		PartitionKey: str("pk"),
		SortKey:      str("sk"),
		// On-demand: lifecycle traffic is bursty (approval waits, sweeps),
		// and an idle deployment then costs nothing for capacity.
		BillingMode:         awsdynamodb.BillingMode_PAY_PER_REQUEST,
		TimeToLiveAttribute: jsii.String(TableTTLAttribute),
		PointInTimeRecoverySpecification: &awsdynamodb.PointInTimeRecoverySpecification{
			PointInTimeRecoveryEnabled: jsii.Bool(true),
		},
		DeletionProtection: jsii.Bool(cfg.DeletionProtection),
		RemovalPolicy:      removalPolicy(cfg),
	})
	table.AddGlobalSecondaryIndex(&awsdynamodb.GlobalSecondaryIndexProps{
		IndexName:      jsii.String(GSI1Name),
		PartitionKey:   str("gsi1pk"),
		SortKey:        str("gsi1sk"),
		ProjectionType: awsdynamodb.ProjectionType_ALL,
	})
	// Sparse: only items that carry gsi2pk (incomplete work the sweeper must
	// find) are indexed, so a sweep reads what needs attention, not the table.
	table.AddGlobalSecondaryIndex(&awsdynamodb.GlobalSecondaryIndexProps{
		IndexName:      jsii.String(GSI2Name),
		PartitionKey:   str("gsi2pk"),
		SortKey:        str("gsi2sk"),
		ProjectionType: awsdynamodb.ProjectionType_ALL,
	})
	return table
}

func newBucket(st awscdk.Stack, cfg Config) awss3.Bucket {
	return awss3.NewBucket(st, jsii.String("BlobBucket"), &awss3.BucketProps{
		Encryption:        awss3.BucketEncryption_S3_MANAGED,
		BlockPublicAccess: awss3.BlockPublicAccess_BLOCK_ALL(),
		ObjectOwnership:   awss3.ObjectOwnership_BUCKET_OWNER_ENFORCED,
		EnforceSSL:        jsii.Bool(true),
		MinimumTLSVersion: jsii.Number(1.2),
		LifecycleRules: &[]*awss3.LifecycleRule{{
			Id:      jsii.String("expire-result-blobs"),
			Enabled: jsii.Bool(true),
			// Result blobs are kept for BlobRetentionDays (90 by default);
			// after that the receipt still holds the outcome and the digest
			// of the result, only the bytes are gone.
			Expiration: awscdk.Duration_Days(jsii.Number(float64(cfg.BlobRetentionDays))),
			// A record that crashed mid-upload leaves parts nobody reads.
			AbortIncompleteMultipartUploadAfter: awscdk.Duration_Days(jsii.Number(1)),
		}},
		// With protection off (dev stacks) the bucket is deleted with the
		// stack, which CloudFormation can only do when it is empty; there is
		// deliberately no auto-delete custom resource (it would add a Node
		// Lambda with broad S3 rights).
		RemovalPolicy: removalPolicy(cfg),
	})
}

// newAnchorBucket is the bucket of decision log anchors: Object Lock in
// compliance mode with a default retention, so no one (the root account
// included) can change or delete an anchor before it expires, versioned
// (Object Lock needs it; latest.json keeps every version), private, TLS
// only. It is kept when the stack is deleted, whatever DeletionProtection
// says: CloudFormation could not empty it anyway.
func newAnchorBucket(st awscdk.Stack, cfg Config) awss3.Bucket {
	return awss3.NewBucket(st, jsii.String("AuditAnchors"), &awss3.BucketProps{
		ObjectLockEnabled:          jsii.Bool(true),
		ObjectLockDefaultRetention: awss3.ObjectLockRetention_Compliance(awscdk.Duration_Days(jsii.Number(float64(cfg.AuditAnchorRetentionDays)))),
		Versioned:                  jsii.Bool(true),
		Encryption:                 awss3.BucketEncryption_S3_MANAGED,
		BlockPublicAccess:          awss3.BlockPublicAccess_BLOCK_ALL(),
		ObjectOwnership:            awss3.ObjectOwnership_BUCKET_OWNER_ENFORCED,
		EnforceSSL:                 jsii.Bool(true),
		MinimumTLSVersion:          jsii.Number(1.2),
		RemovalPolicy:              awscdk.RemovalPolicy_RETAIN,
	})
}

func newDeadLetterQueue(st awscdk.Stack) awssqs.Queue {
	return awssqs.NewQueue(st, jsii.String("RecoverDeadLetters"), &awssqs.QueueProps{
		// SQS-managed SSE, not KMS: EventBridge and Lambda can deliver to it
		// without a key policy, and the messages are lifecycle events, not
		// secrets.
		Encryption:      awssqs.QueueEncryption_SQS_MANAGED,
		EnforceSSL:      jsii.Bool(true),
		RetentionPeriod: awscdk.Duration_Days(jsii.Number(14)),
	})
}
