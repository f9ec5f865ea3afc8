// Command dispatch is the dispatch Lambda: attempt lease, start evidence,
// then the executor (mode sync) or the host task publication (mode publish).
package main

import (
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/openprogram/lifecycle/shared/awsstack"
)

func main() {
	d := awsstack.Must()
	lambda.Start(d.Service.Dispatch)
}
