// Command record is the record Lambda: it seals the write-once receipt,
// then folds it into the execution's checkpoint.
package main

import (
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/openprogram/lifecycle/shared/awsstack"
)

func main() {
	d := awsstack.Must()
	lambda.Start(d.Service.Record)
}
