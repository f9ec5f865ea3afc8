package stack

import (
	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsstepfunctions"
	"github.com/aws/jsii-runtime-go"
)

// AliasName is the alias that points at the published version.
const AliasName = "live"

type stateMachine struct {
	sm         awsstepfunctions.StateMachine
	aliasARN   *string
	versionARN *string
	// qualifiedARN matches the machine's versions and aliases: "<arn>:*".
	qualifiedARN *string
	// executionsARN matches every execution of this machine (and only it):
	// arn:<partition>:states:<region>:<account>:execution:<name>:*
	executionsARN *string
	logs          awslogs.LogGroup
}

// newStateMachine deploys the ASL file as it is: DefinitionString is the
// file's text, and each ${...} placeholder in it is filled by
// DefinitionSubstitutions with the ARN of the function it names. The role
// may invoke exactly the functions the file references, and the retired
// functions earlier revisions' versions still reference.
func newStateMachine(st awscdk.Stack, cfg Config, def Definition, fns map[string]lambdaFunction) stateMachine {
	logs := awslogs.NewLogGroup(st, jsii.String("StateMachineLogs"), &awslogs.LogGroupProps{
		// The /aws/vendedlogs/ prefix is what AWS recommends for Step
		// Functions: it keeps the account's CloudWatch Logs resource policy
		// from growing with every state machine log group.
		LogGroupName: awscdk.Fn_Join(jsii.String(""), &[]*string{
			jsii.String("/aws/vendedlogs/states/"), awscdk.Aws_STACK_NAME(), jsii.String("-action-lifecycle"),
		}),
		Retention:     awslogs.RetentionDays_ONE_MONTH,
		RemovalPolicy: removalPolicy(cfg),
	})

	// Each Task names the Lambda version this deployment published (see
	// publishVersion): qualified, so a state machine version pins the code.
	subs := map[string]*string{}
	for _, p := range def.Placeholders {
		subs[p] = fns[substitutionFunctions[p]].version.FunctionArn()
	}
	sm := awsstepfunctions.NewStateMachine(st, jsii.String("ActionLifecycle"), &awsstepfunctions.StateMachineProps{
		Comment:                 jsii.String("OpenProgram action lifecycle (statemachines/action-lifecycle.asl.json)"),
		DefinitionBody:          awsstepfunctions.DefinitionBody_FromString(jsii.String(def.Body)),
		DefinitionSubstitutions: &subs,
		// Standard: approval waits last up to days, executions are
		// exactly-once per name (the action id), and history is kept.
		StateMachineType: awsstepfunctions.StateMachineType_STANDARD,
		Logs: &awsstepfunctions.LogOptions{
			Destination: logs,
			Level:       awsstepfunctions.LogLevel_ALL,
			// Every state transition is logged, but not its input and
			// output: those carry tool arguments and results, which live in
			// the execution history and the store, not in a second copy.
			IncludeExecutionData: jsii.Bool(false),
		},
		TracingEnabled: jsii.Bool(true),
		RemovalPolicy:  removalPolicy(cfg),
	})
	for _, p := range def.Placeholders {
		// lambda:InvokeFunction on the function ARN and "<arn>:*" (its
		// versions and aliases), nothing broader.
		fns[substitutionFunctions[p]].fn.GrantInvoke(sm)
	}
	for _, name := range retiredFunctions {
		// Earlier revisions' state machine versions invoke the versions
		// of it their deployments published.
		fns[name].fn.GrantInvoke(sm)
	}

	// A published version and an alias pointing at it. Old versions are kept
	// on update (UpdateReplacePolicy Retain) so executions started on them
	// stay attributable; deleting the stack deletes the machine and with it
	// every version.
	version := awsstepfunctions.NewCfnStateMachineVersion(st, jsii.String("ActionLifecycleVersion"), &awsstepfunctions.CfnStateMachineVersionProps{
		StateMachineArn: sm.StateMachineArn(),
		// Referencing the revision id publishes a new version exactly when
		// the definition (or another revision-relevant property) changed.
		StateMachineRevisionId: sm.StateMachineRevisionId(),
		Description:            jsii.String("Published by the lifecycle stack"),
	})
	version.CfnOptions().SetUpdateReplacePolicy(awscdk.CfnDeletionPolicy_RETAIN)
	// The validator wants DeletionPolicy Retain as well; that would protect
	// the version from deletion, which is not the intent here.
	awscdk.Validations_Of(version).Acknowledge(&awscdk.Acknowledgment{
		Id:     jsii.String("CloudFormation-Validate::W3011"),
		Reason: jsii.String("UpdateReplacePolicy alone is intended: keep old versions on update, delete them with the stack"),
	})
	alias := awsstepfunctions.NewCfnStateMachineAlias(st, jsii.String("ActionLifecycleAlias"), &awsstepfunctions.CfnStateMachineAliasProps{
		Name:        jsii.String(AliasName),
		Description: jsii.String("The version clients run"),
		RoutingConfiguration: &[]*awsstepfunctions.CfnStateMachineAlias_RoutingConfigurationVersionProperty{{
			StateMachineVersionArn: version.AttrArn(),
			Weight:                 jsii.Number(100),
		}},
	})

	executions := st.FormatArn(&awscdk.ArnComponents{
		Service:      jsii.String("states"),
		Resource:     jsii.String("execution"),
		ResourceName: awscdk.Fn_Join(jsii.String(":"), &[]*string{sm.StateMachineName(), jsii.String("*")}),
		ArnFormat:    awscdk.ArnFormat_COLON_RESOURCE_NAME,
	})
	return stateMachine{sm: sm, aliasARN: alias.AttrArn(), versionARN: version.AttrArn(), executionsARN: executions, logs: logs,
		qualifiedARN: awscdk.Fn_Join(jsii.String(""), &[]*string{sm.StateMachineArn(), jsii.String(":*")})}
}
