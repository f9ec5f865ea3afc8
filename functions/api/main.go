// Command api is the HTTP API Lambda behind API Gateway (HTTP API, payload
// format 2.0). The gateway's JWT authorizer verifies tokens; the handler
// reads the verified claims (sub, role, sid) from the request context
// (auth.GatewayClaims). API Gateway cannot stream, so the events route
// answers JSON batches, and long polls stay under the 29 s integration
// limit. /mcp is the MCP gateway, stateless (JSON responses, no sessions).
//
// A stored policy is checked as `lifecycle serve` checks it: sandbox paths
// that open a credential store under the host workers' home
// (LIFECYCLE_HOST_HOME, optional) are refused with a 400 (policyStore).
package main

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path"
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
	"github.com/openprogram/lifecycle/shared/store"
)

func main() {
	d := awsstack.Must("LIFECYCLE_STATE_MACHINE_ARN")
	ctl, err := control.New(control.Config{Flow: d.Service, Logger: d.Logger})
	if err != nil {
		slog.Error("wiring", "error", err)
		os.Exit(1)
	}
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
	// Policy replay and the policy check: the permission engine as the
	// authorize function builds it (lexical paths, no host state directory),
	// in the same trusted context.
	eng, err := permission.NewEngine(permission.Config{})
	if err != nil {
		slog.Error("wiring", "error", err)
		os.Exit(1)
	}
	home, err := hostHome(os.Getenv("LIFECYCLE_HOST_HOME"))
	if err != nil {
		slog.Error("configuration", "error", err)
		os.Exit(1)
	}
	policies := policyStore(d.Store, eng, home)
	commands := httpapi.ControlService{Service: ctl}
	tools := httpapi.PermissionTools{Policies: policystore.Parsed[*permission.Policy]{Store: policies, Parse: permission.ParsePolicy},
		Default: decider.DefaultPolicy(), Catalog: catalog}
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

// policyStore stores session policies checked as `lifecycle serve` checks
// them (httpapi.PermissionPolicyValidator): a policy whose sandbox paths
// open a protected path is refused with a 400 naming the setting, the
// path and the protected path, instead of being stored and then refusing
// every host call. A Lambda has no host state directory (the service's
// state is DynamoDB and S3, which no sandbox path reaches), so the
// protected paths are the credential stores under home, the home of the
// user the host workers run as ("" when unknown: the stores are still
// refused by name anywhere, and writable home directories under /home,
// /Users and /root, by permission.ParsePolicy).
func policyStore(st store.Store, eng *permission.Engine, home string) *policystore.Store {
	return policystore.New(st, httpapi.PermissionPolicyValidator(eng, home), policystore.WithDefault(json.RawMessage(decider.DefaultPolicyDoc)))
}

// hostHome is LIFECYCLE_HOST_HOME: empty, or an absolute clean path.
func hostHome(v string) (string, error) {
	if v != "" && (!path.IsAbs(v) || path.Clean(v) != v || v == "/") {
		return "", fmt.Errorf("LIFECYCLE_HOST_HOME=%q: want the absolute home directory of the user the host workers run as", v)
	}
	return v, nil
}
