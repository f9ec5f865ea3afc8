// Command project is the project Lambda: delivery projected, the event
// appended to the session log and published to the EventBridge bus.
package main

import (
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/openprogram/lifecycle/shared/awsstack"
)

func main() {
	d := awsstack.Must("LIFECYCLE_EVENT_BUS")
	lambda.Start(d.Service.Project)
}
