// Command approval is the approval-wait Lambda invoked by the AwaitApproval
// waitForTaskToken state: it stores the task token on a fresh pending
// approval (mode await) or records an expired wait (mode expire).
package main

import (
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/openprogram/lifecycle/shared/awsstack"
)

func main() {
	d := awsstack.Must()
	lambda.Start(d.Service.ApprovalStep)
}
