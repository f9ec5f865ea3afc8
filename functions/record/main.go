// Command record is the record Lambda, the state machine's last step: it
// seals the write-once receipt; then, in one transaction, folds it into
// the execution's checkpoint and projects the action (delivery projected,
// the action.projected event appended to the session log); then publishes
// the event to the EventBridge bus.
package main

import (
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/openprogram/lifecycle/shared/awsstack"
)

func main() {
	d := awsstack.Must("LIFECYCLE_EVENT_BUS")
	lambda.Start(d.Service.Record)
}
