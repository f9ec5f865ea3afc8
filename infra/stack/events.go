package stack

import (
	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatchactions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsevents"
	"github.com/aws/aws-cdk-go/awscdk/v2/awseventstargets"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssns"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsstepfunctions"
	"github.com/aws/jsii-runtime-go"
)

// The metric the record function emits in CloudWatch Embedded Metric Format
// each time it records outcome=unknown: namespace OpenProgram/Lifecycle,
// metric UnknownOutcomes, unit Count, value 1, and NO dimensions
// ("Dimensions": [[]]). CloudWatch matches metrics by their exact dimension
// set, so a dimension added on the emitting side would silently detach the
// alarm.
const (
	MetricNamespace      = "OpenProgram/Lifecycle"
	MetricUnknownOutcome = "UnknownOutcomes"
)

// Failed execution statuses that trigger an immediate recovery pass.
var failedStatuses = []string{"FAILED", "TIMED_OUT", "ABORTED"}

// newRecoverRules wires the two EventBridge triggers of the recover function.
func newRecoverRules(st awscdk.Stack, recoverFn awslambda.Function, sm awsstepfunctions.StateMachine, dlq awssqs.IQueue) {
	target := func() awsevents.IRuleTarget {
		// EventBridge's own delivery retries; what it cannot deliver lands in
		// the same dead-letter queue as the function's async failures.
		return awseventstargets.NewLambdaFunction(recoverFn, &awseventstargets.LambdaFunctionProps{
			DeadLetterQueue: dlq,
			RetryAttempts:   jsii.Number(2),
			MaxEventAge:     awscdk.Duration_Hours(jsii.Number(1)),
		})
	}
	// The sweeper runs every minute. It is the safety net, so its period is
	// the longest a stranded action waits for recovery when the fast path
	// below does not fire (1 minute is EventBridge's finest schedule).
	awsevents.NewRule(st, jsii.String("RecoverSchedule"), &awsevents.RuleProps{
		Description: jsii.String("Lifecycle recovery sweep, every minute"),
		Schedule:    awsevents.Schedule_Rate(awscdk.Duration_Minutes(jsii.Number(1))),
		Targets:     &[]awsevents.IRuleTarget{target()},
	})
	// The fast path: an execution of this machine that failed, timed out or
	// was aborted is recovered at once instead of at the next sweep.
	awsevents.NewRule(st, jsii.String("RecoverOnExecutionFailure"), &awsevents.RuleProps{
		Description: jsii.String("Lifecycle recovery when an execution fails, times out or is aborted"),
		EventPattern: &awsevents.EventPattern{
			Source:     jsii.Strings("aws.states"),
			DetailType: jsii.Strings("Step Functions Execution Status Change"),
			Detail: &map[string]any{
				"status":          jsii.Strings(failedStatuses...),
				"stateMachineArn": []*string{sm.StateMachineArn()},
			},
		},
		Targets: &[]awsevents.IRuleTarget{target()},
	})
}

// newAlarms raises an alarm for each condition a human must look at.
func newAlarms(st awscdk.Stack, cfg Config, sm awsstepfunctions.StateMachine, dlq awssqs.Queue) {
	fiveMinutes := awscdk.Duration_Minutes(jsii.Number(5))
	sum := &awscloudwatch.MetricOptions{Period: fiveMinutes, Statistic: jsii.String("Sum")}
	var topic awssns.ITopic
	if cfg.AlarmTopicARN != "" {
		topic = awssns.Topic_FromTopicArn(st, jsii.String("AlarmTopic"), jsii.String(cfg.AlarmTopicARN))
	}
	alarm := func(id, description string, metric awscloudwatch.IMetric, threshold float64) {
		a := awscloudwatch.NewAlarm(st, jsii.String(id), &awscloudwatch.AlarmProps{
			AlarmDescription:   jsii.String(description),
			Metric:             metric,
			Threshold:          jsii.Number(threshold),
			EvaluationPeriods:  jsii.Number(1),
			ComparisonOperator: awscloudwatch.ComparisonOperator_GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
			// No data means nothing happened, which is the healthy case.
			TreatMissingData: awscloudwatch.TreatMissingData_NOT_BREACHING,
		})
		if topic != nil {
			a.AddAlarmAction(awscloudwatchactions.NewSnsAction(topic))
		}
	}
	alarm("ExecutionsFailedAlarm",
		"A lifecycle execution failed: its actions are recovered by the sweeper, but a failure is a bug or an outage",
		sm.MetricFailed(sum), 1)
	alarm("ExecutionsTimedOutAlarm",
		"A lifecycle execution timed out",
		sm.MetricTimedOut(sum), 1)
	alarm("UnknownOutcomesAlarm",
		"An action's outcome is unknown (it may have run): effect reconciliation is required",
		awscloudwatch.NewMetric(&awscloudwatch.MetricProps{
			Namespace:  jsii.String(MetricNamespace),
			MetricName: jsii.String(MetricUnknownOutcome),
			Period:     fiveMinutes,
			Statistic:  jsii.String("Sum"),
		}), 1)
	// Anything in the dead-letter queue is a recovery trigger that was lost;
	// five minutes leaves room for nothing but a human.
	alarm("DeadLetterAgeAlarm",
		"A recovery trigger is sitting in the dead-letter queue",
		dlq.MetricApproximateAgeOfOldestMessage(&awscloudwatch.MetricOptions{
			Period: fiveMinutes, Statistic: jsii.String("Maximum"),
		}), 300)
}
