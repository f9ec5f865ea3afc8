// Command api is the HTTP API Lambda behind API Gateway (HTTP API, payload
// format 2.0). The gateway's JWT authorizer verifies tokens; the handler
// reads the verified claims (sub, role, sid) from the request context
// (auth.GatewayClaims). API Gateway cannot stream, so the events route
// answers JSON batches, and long polls stay under the 29 s integration
// limit. /mcp is the MCP gateway, stateless (JSON responses, no sessions).
package main

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/openprogram/lifecycle/shared/actionflow"
	"github.com/openprogram/lifecycle/shared/auth"
	"github.com/openprogram/lifecycle/shared/awsstack"
	"github.com/openprogram/lifecycle/shared/control"
	"github.com/openprogram/lifecycle/shared/decider"
	"github.com/openprogram/lifecycle/shared/hosttools"
	"github.com/openprogram/lifecycle/shared/httpapi"
	"github.com/openprogram/lifecycle/shared/httpapi/apigw"
	"github.com/openprogram/lifecycle/shared/mcpgateway"
	"github.com/openprogram/lifecycle/shared/permission"
	"github.com/openprogram/lifecycle/shared/policystore"
	"github.com/openprogram/lifecycle/shared/replay"
)

func main() {
	d := awsstack.Must("LIFECYCLE_STATE_MACHINE_ARN")
	ctl, err := control.New(control.Config{Flow: d.Service, Logger: d.Logger})
	if err != nil {
		slog.Error("wiring", "error", err)
		os.Exit(1)
	}
	policies := policystore.New(d.Store, httpapi.ValidatePermissionPolicy, policystore.WithDefault(json.RawMessage(decider.DefaultPolicyDoc)))
	catalog := append([]permission.ToolSpec(nil), hosttools.Specs...)
	for _, arn := range d.Env.ToolFunctionARNs {
		catalog = append(catalog, permission.ToolSpec{Name: arn[strings.LastIndex(arn, ":")+1:]})
	}
	// Links to the AWS consoles: the region Lambda runs in, the log groups
	// the stack names (LIFECYCLE_LOG_GROUPS, function=group,...).
	groups, err := httpapi.ParseLogGroups(os.Getenv("LIFECYCLE_LOG_GROUPS"))
	if err != nil {
		slog.Error("configuration", "error", err)
		os.Exit(1)
	}
	commands := httpapi.ControlService{Service: ctl}
	tools := httpapi.PermissionTools{Policies: policystore.Parsed[*permission.Policy]{Store: policies, Parse: permission.ParsePolicy},
		Default: decider.DefaultPolicy(), Catalog: catalog}
	// Policy replay: the permission engine as the authorize function builds
	// it (lexical paths), in the same trusted context.
	eng, err := permission.NewEngine(permission.Config{})
	if err != nil {
		slog.Error("wiring", "error", err)
		os.Exit(1)
	}
	dec := &decider.Decider{Engine: eng, ProjectRoot: d.Env.ProjectRoot, WorkingDir: d.Env.ProjectRoot}
	replays, err := replay.New(replay.Config{Engine: eng, Context: dec.Trusted, Actions: actionflow.History{Store: d.Store}, Store: d.Store})
	if err != nil {
		slog.Error("wiring", "error", err)
		os.Exit(1)
	}
	h, err := handler(httpapi.Config{
		Service: d.Service, Auth: auth.GatewayClaims{}, Policies: policies, Control: commands, Facts: commands, Tools: tools,
		Logger: d.Logger, DisableStreaming: true, NoUI: true, MaxWait: 20 * time.Second, Replays: replays,
		Machines: d.SFN, AWSConsole: &httpapi.AWSConsole{Region: os.Getenv("AWS_REGION"), LogGroups: groups},
	})
	if err != nil {
		slog.Error("wiring", "error", err)
		os.Exit(1)
	}
	lambda.Start(apigw.Handler{H: h}.Handle)
}

// handler is the API and, at /mcp, the MCP gateway in stateless mode (no
// session outlives a Lambda invocation; calls are held at most
// mcpgateway.DefaultStatelessHold, under API Gateway's 30 s).
func handler(cfg httpapi.Config) (http.Handler, error) {
	api, err := httpapi.New(cfg)
	if err != nil {
		return nil, err
	}
	gw, err := mcpgateway.New(mcpgateway.Config{Service: cfg.Service, Auth: cfg.Auth, Tools: cfg.Tools, Logger: cfg.Logger, Stateless: true})
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.Handle(mcpgateway.Path, gw)
	mux.Handle("/", api)
	return mux, nil
}
