// Command project is the project Lambda, retired: the record step projects
// now. Only state machine versions of earlier revisions, whose definition
// has a Project state after RecordOutcome, invoke it (their executions in
// flight, and new actions of executions that keep their original
// revision): on an action the record step projected it publishes the
// stored action.projected event again; on one an earlier record step left
// recorded it projects it (delivery projected and the event, one
// transaction) and publishes the event.
package main

import (
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/openprogram/lifecycle/shared/awsstack"
)

func main() {
	d := awsstack.Must("LIFECYCLE_EVENT_BUS")
	lambda.Start(d.Service.Project)
}
