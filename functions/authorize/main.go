// Command authorize is the authorize Lambda: the permission decision
// (mode initial) and the revalidation after an approval (mode revalidate).
package main

import (
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/openprogram/lifecycle/shared/awsstack"
)

func main() {
	d := awsstack.Must()
	lambda.Start(d.Service.Authorize)
}
