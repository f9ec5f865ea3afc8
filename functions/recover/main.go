// Command recover is the recovery sweeper Lambda, triggered by the
// EventBridge schedule and by Step Functions status-change events (FAILED,
// TIMED_OUT, ABORTED) of the lifecycle state machine.
package main

import (
	"log/slog"
	"os"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/openprogram/lifecycle/shared/awsstack"
	"github.com/openprogram/lifecycle/shared/control"
	"github.com/openprogram/lifecycle/shared/modelreq"
	"github.com/openprogram/lifecycle/shared/policystore"
	"github.com/openprogram/lifecycle/shared/process"
	"github.com/openprogram/lifecycle/shared/recovery"
	"github.com/openprogram/lifecycle/shared/recovery/recoverfn"
)

func main() {
	d := awsstack.Must("LIFECYCLE_STATE_MACHINE_ARN", "LIFECYCLE_EVENT_BUS")
	ctl, err := control.New(control.Config{Flow: d.Service, Logger: d.Logger})
	if err != nil {
		slog.Error("wiring", "error", err)
		os.Exit(1)
	}
	models := modelreq.ForFlow(d.Service)
	sw, err := recovery.New(recovery.Config{Flow: d.Service, Control: ctl, Machines: d.SFN,
		Windows: policystore.New(d.Service.Store(), nil), Run: models, Logger: d.Logger})
	if err != nil {
		slog.Error("wiring", "error", err)
		os.Exit(1)
	}
	lambda.Start(recoverfn.Handler{Sweeper: sw, Log: d.Logger, Models: models, Processes: process.ForFlow(d.Service)}.Handle)
}
