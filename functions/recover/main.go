// Command recover is the recovery sweeper Lambda, triggered by the
// EventBridge schedule and by Step Functions status-change events (FAILED,
// TIMED_OUT, ABORTED) of the lifecycle state machine.
package main

import (
	"context"
	"log/slog"
	"os"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/openprogram/lifecycle/shared/actionflow"
	"github.com/openprogram/lifecycle/shared/audit"
	"github.com/openprogram/lifecycle/shared/audit/s3anchor"
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
	h := recoverfn.Handler{Sweeper: sw, Log: d.Logger, Models: models, Processes: process.ForFlow(d.Service)}
	// Optional (CDK context lifecycle:auditAnchor): anchor decision log
	// heads in the Object Lock bucket at each scheduled sweep.
	if bucket := os.Getenv("LIFECYCLE_AUDIT_ANCHOR_BUCKET"); bucket != "" {
		cfg, err := config.LoadDefaultConfig(context.Background())
		if err != nil {
			slog.Error("wiring", "error", err)
			os.Exit(1)
		}
		h.Anchor = &audit.Anchorer{Store: d.Service.Store(), Sink: &s3anchor.Sink{Client: s3.NewFromConfig(cfg), Bucket: bucket},
			Active: actionflow.OpenExecutionsIndex}
	}
	lambda.Start(h.Handle)
}
