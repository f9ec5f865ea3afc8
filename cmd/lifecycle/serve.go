package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/openprogram/lifecycle/cmd/lifecycle/clientcmd"
	"github.com/openprogram/lifecycle/shared/actionflow"
	"github.com/openprogram/lifecycle/shared/auth"
	"github.com/openprogram/lifecycle/shared/decider"
	"github.com/openprogram/lifecycle/shared/embedded"
	"github.com/openprogram/lifecycle/shared/executor"
	"github.com/openprogram/lifecycle/shared/hosttools"
	"github.com/openprogram/lifecycle/shared/httpapi"
	"github.com/openprogram/lifecycle/shared/identity"
	"github.com/openprogram/lifecycle/shared/ids"
	"github.com/openprogram/lifecycle/shared/mcpdownstream"
	"github.com/openprogram/lifecycle/shared/mcpgateway"
	"github.com/openprogram/lifecycle/shared/permission"
	"github.com/openprogram/lifecycle/shared/permission/riskreview"
	"github.com/openprogram/lifecycle/shared/policystore"
	"github.com/openprogram/lifecycle/shared/question"
	"github.com/openprogram/lifecycle/shared/recovery"
	"github.com/openprogram/lifecycle/shared/replay"
	"github.com/openprogram/lifecycle/shared/store"
)

type serveOptions struct {
	addr, stateDir, workspace, session, restartWindow, logLevel string
	sweep                                                       time.Duration
	// mcpServers is the downstream MCP servers file (see package mcpdownstream).
	mcpServers string
	// revisionPolicy is the default revision policy of new executions.
	revisionPolicy string
}

func serveCmd() *cobra.Command {
	o := serveOptions{}
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run the whole lifecycle in one process: SQLite store, embedded Step Functions, API, UI, host worker",
		Long: `serve starts the embedded stack: the durable SQLite store and the two token signing keys
(--state-dir; by default $XDG_STATE_HOME/openprogram-lifecycle/<workspace>-<hash>, created 0700,
never inside the workspace, and protected from every tool the agent runs), the embedded
Step Functions engine running statemachines/action-lifecycle.asl.json, the lifecycle handlers,
the HTTP API and the Activity UI on --addr, the recovery sweeper, and a host worker that runs
Bash/Read/Write/Edit in --workspace. Kill it at any point and start it again: it continues
from what it stored. With --mcp-servers FILE the tools of downstream MCP servers join the
catalog as mcp__<server>__<tool> and run through the same lifecycle (see the README).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return serve(cmd.Context(), o, cmd.OutOrStdout()) },
	}
	f := cmd.Flags()
	f.StringVar(&o.addr, "addr", "127.0.0.1:8080", "listen address of the API and UI")
	f.StringVar(&o.stateDir, "state-dir", os.Getenv("LIFECYCLE_STATE_DIR"), "durable state: state.db, blobs, the signing keys (env LIFECYCLE_STATE_DIR; default $XDG_STATE_HOME/openprogram-lifecycle/<workspace>-<hash>); never inside the workspace")
	f.StringVar(&o.workspace, "workspace", clientcmd.EnvOr("LIFECYCLE_WORKSPACE", clientcmd.DefaultWorkspace), "directory the host worker runs tools in (env LIFECYCLE_WORKSPACE)")
	f.StringVar(&o.session, "session", "ses_local", "session of the printed human token")
	f.StringVar(&o.restartWindow, "restart-window", "-1", "automatic continuation after an interruption, for sessions whose policy sets no restart_window_seconds: -1 unlimited, 0 off, or a duration (2h)")
	f.DurationVar(&o.sweep, "sweep-interval", time.Minute, "recovery sweep period (the EventBridge schedule's stand-in)")
	f.StringVar(&o.logLevel, "log-level", "info", "debug, info, warn or error")
	f.StringVar(&o.revisionPolicy, "revision-policy", clientcmd.EnvOr("LIFECYCLE_REVISION_POLICY", "keep_original"), "revision policy of new executions (env LIFECYCLE_REVISION_POLICY): keep_original (each keeps the revision it started on) or use_latest (each adopts a compatible newer revision at its next action); per execution: lifecycle revision-policy")
	f.StringVar(&o.mcpServers, "mcp-servers", os.Getenv(mcpdownstream.EnvConfig), "downstream MCP servers whose tools join the catalog as mcp__<server>__<tool> (JSON file; env "+mcpdownstream.EnvConfig+")")
	return cmd
}

func serve(ctx context.Context, o serveOptions, out io.Writer) error {
	var level slog.Level
	if err := level.UnmarshalText([]byte(o.logLevel)); err != nil {
		return fmt.Errorf("--log-level: %w", err)
	}
	log := slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	window, err := recovery.ParseWindow(o.restartWindow)
	if err != nil {
		return fmt.Errorf("--restart-window: %w", err)
	}
	if err := ids.Validate("--session", o.session); err != nil {
		return err
	}
	if o.revisionPolicy != "" && !actionflow.ValidRevisionPolicy(o.revisionPolicy) { // "": keep_original
		return fmt.Errorf("--revision-policy: %q is not keep_original or use_latest", o.revisionPolicy)
	}
	ws, err := filepath.Abs(o.workspace)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(ws, 0o755); err != nil {
		return fmt.Errorf("workspace: %w", err)
	}
	home, _ := os.UserHomeDir()
	// The host worker's tools inherit this process's environment: a token
	// exported in the shell that started serve (a human one, even) must
	// not be handed to the agent.
	if os.Getenv("LIFECYCLE_TOKEN") != "" {
		os.Unsetenv("LIFECYCLE_TOKEN")
		log.Warn("LIFECYCLE_TOKEN was set in the environment of serve; it was removed so the agent's tools do not inherit it")
	}
	stateDir, err := clientcmd.StateDir(o.stateDir, ws)
	if err != nil {
		return err
	}
	warning, err := embedded.CheckStateDir(stateDir, ws)
	if err != nil {
		return err
	}
	if warning != "" {
		fmt.Fprintf(out, "WARNING: %s\n\n", warning)
	}
	legacy, _ := filepath.Abs(".lifecycle")
	if _, err := os.Stat(filepath.Join(legacy, "state.db")); err == nil && o.stateDir == "" && legacy != stateDir {
		fmt.Fprintf(out, "NOTE: %s holds state of an older version, which kept it beside the workspace; it is no longer used\n"+
			"by default (pass --state-dir %s to keep using it, or move it to %s). It stays protected from the agent's tools.\n\n", legacy, legacy, stateDir)
	}
	if was, err := embedded.SecureStateDir(stateDir); err != nil {
		return err
	} else if was != 0 {
		log.Warn("the state directory was readable by other users; tightened it to 0700", "state_dir", stateDir, "was", fmt.Sprintf("%04o", was))
	}
	tightened, err := auth.TightenKeyFiles(stateDir)
	for _, t := range tightened {
		log.Warn("a signing key was readable by other users; tightened it to 0600", "key", t)
	}
	if err != nil {
		return err
	}
	keys, err := auth.LoadOrCreateKeys(stateDir)
	if err != nil {
		return err
	}
	issuer, err := auth.NewIssuer(keys)
	if err != nil {
		return err
	}
	// No tool may read, write, delete or list the state (the keys above all)
	// nor any lifecycle's state under the default root, nor a legacy state
	// directory; credential stores are protected by the engine's default.
	protected := []string{stateDir}
	if root, err := embedded.StateRoot(); err == nil && root != stateDir {
		protected = append(protected, root)
	}
	if _, err := os.Stat(legacy); err == nil && legacy != stateDir {
		protected = append(protected, legacy)
	}
	// A bad servers file refuses to start (nothing is running yet); a
	// server that is down does not (the lifecycle keeps serving approvals,
	// receipts and recovery; a call of its tools connects again first).
	var mcpCfg mcpdownstream.Config
	if o.mcpServers != "" {
		if mcpCfg, err = mcpdownstream.LoadConfig(o.mcpServers); err != nil {
			return fmt.Errorf("--mcp-servers: %w", err)
		}
		// The file may hold the servers' credentials (env, headers): no
		// tool of the agent reads it, unless it lies in the workspace,
		// where protecting it would refuse every walk of the project.
		file, err := filepath.Abs(o.mcpServers)
		if err != nil {
			return fmt.Errorf("--mcp-servers: %w", err)
		}
		if rel, err := filepath.Rel(ws, file); err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			fmt.Fprintf(out, "WARNING: the MCP servers file %s is inside the workspace, where the agent's tools can read it; keep credentials out of it or move it.\n\n", file)
		} else {
			protected = append(protected, file)
		}
	}
	// Listen before starting anything, so a busy port fails fast.
	ln, err := net.Listen("tcp", o.addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", o.addr, err)
	}
	defer ln.Close()

	catalog := append([]permission.ToolSpec(nil), hosttools.Specs...)
	catalog = append(catalog, permission.ToolSpec{Name: identity.QuestionTool, Description: question.Description, InputSchema: question.InputSchema})
	var downstream *mcpdownstream.Pool
	var downstreamStatus []mcpdownstream.Status
	var mcpRoutes executor.Routes
	var mcpExecutors map[string]actionflow.Executor
	var contracts identity.Contracts
	if len(mcpCfg.Servers) > 0 {
		downstream, downstreamStatus = mcpdownstream.Start(ctx, mcpCfg, mcpdownstream.Options{Logger: log})
		defer func() {
			if err := downstream.Close(); err != nil {
				log.Warn("closing MCP servers", "error", err)
			}
		}()
		catalog = append(catalog, downstream.Specs()...)
		mcpRoutes = downstream.Routes()
		mcpExecutors = map[string]actionflow.Executor{mcpdownstream.Kind: downstream}
		// A downstream call is checked against its tool's input schema when
		// prepared, as a built-in tool is against its contract.
		contracts = downstream.Contracts(identity.Builtin)
	}
	var policies *policystore.Store
	var live policystore.Parsed[*permission.Policy]
	var dec *decider.Decider
	es, err := embedded.Start(ctx, embedded.Config{
		Routes: mcpRoutes, Executors: mcpExecutors, Contracts: contracts,
		StateDir: stateDir, Workspace: ws, Logger: log, RestartWindow: window, SweepInterval: o.sweep,
		RevisionPolicy: o.revisionPolicy,
		NewDecider: func(st store.Store) (actionflow.Decider, error) {
			eng, err := permission.NewEngine(permission.Config{Classifier: riskreview.New(), Counters: st, FS: permission.OSFS{},
				ProtectedPaths: protected})
			if err != nil {
				return nil, err
			}
			// A policy whose sandbox paths open the state directory or a
			// credential store is refused when stored.
			policies = policystore.New(st, httpapi.PermissionPolicyValidator(eng, home), policystore.WithDefault(json.RawMessage(decider.DefaultPolicyDoc)),
				policystore.WithRestartDefault(window.Seconds()))
			live = policystore.Parsed[*permission.Policy]{Store: policies, Parse: permission.ParsePolicy}
			dec = &decider.Decider{Engine: eng, Policies: live, ProjectRoot: ws, WorkingDir: ws, HomeDir: home,
				History: actionflow.History{Store: st}}
			return dec, nil
		},
	})
	if err != nil {
		return err
	}
	ctl := httpapi.ControlService{Service: es.Control}
	tools := httpapi.PermissionTools{Policies: live, Default: decider.DefaultPolicy(), Catalog: catalog}
	// Policy replay decides recorded actions again with the live engine, in
	// the decider's trusted context.
	replays, err := replay.New(replay.Config{Engine: dec.Engine, Context: dec.Trusted, Actions: actionflow.History{Store: es.Store}, Store: es.Store})
	if err != nil {
		es.Close(context.Background())
		return err
	}
	api, err := httpapi.New(httpapi.Config{
		Service: es.Service, Auth: issuer, Policies: policies, Control: ctl, Facts: ctl, Wake: es.Bus, Logger: log,
		Tools: tools, Machines: es.SFNClient, Replays: replays, Revisions: es.Revisions,
	})
	if err != nil {
		es.Close(context.Background())
		return err
	}
	// /mcp: the MCP front door, the same tools, tokens and submit path.
	gw, err := mcpgateway.New(mcpgateway.Config{Service: es.Service, Auth: issuer, Tools: tools, Wake: es.Bus, Logger: log})
	if err != nil {
		es.Close(context.Background())
		return err
	}
	defer gw.Close()
	mux := http.NewServeMux()
	mux.Handle(mcpgateway.Path, gw)
	mux.Handle("/", api)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.Serve(ln) }()

	human, err := issuer.Issue(auth.RoleHuman, ids.SessionID(o.session), 12*time.Hour)
	if err != nil {
		return err
	}
	base := "http://" + ln.Addr().String()
	fmt.Fprintf(out, "OpenProgram action lifecycle is running.\n\n")
	fmt.Fprintf(out, "  Activity UI   %s/ui/#token=%s\n", base, human)
	fmt.Fprintf(out, "  API           %s/v1   (health: %s/healthz)\n", base, base)
	fmt.Fprintf(out, "  API reference %s%s\n", base, httpapi.DocsPath)
	fmt.Fprintf(out, "  MCP           %s%s   (streamable HTTP; Authorization: Bearer <agent token>)\n", base, mcpgateway.Path)
	fmt.Fprintf(out, "  Human token   %s   (session %s, 12h)\n", human, o.session)
	fmt.Fprintf(out, "  State         %s   (0700; keys auth.key and human.key 0600)\n", stateDir)
	fmt.Fprintf(out, "  Workspace     %s\n", ws)
	fmt.Fprintf(out, "  Step Functions endpoint (AWS_ENDPOINT_URL_SFN)  %s\n", es.SFNEndpoint)
	fmt.Fprintf(out, "  State machine %s\n", es.Engine.StateMachineArn())
	fmt.Fprintf(out, "  Revision      %s (handler contract %d) on %s, alias %s\n", es.Revision.Revision.ID, es.Revision.Revision.Contract, es.LiveVersionARN, es.LiveAliasARN)
	for _, st := range downstreamStatus {
		if st.Err != nil {
			fmt.Fprintf(out, "  MCP server    %s (%s): NOT AVAILABLE, its tools are not listed (a call connects again first): %v\n", st.Server, st.Transport, st.Err)
			continue
		}
		skipped := ""
		if len(st.Skipped) > 0 {
			skipped = fmt.Sprintf("; skipped %v (names no rule can name)", st.Skipped)
		}
		fmt.Fprintf(out, "  MCP server    %s (%s): %d tools as mcp__%s__<tool>%s\n", st.Server, st.Transport, st.Tools, st.Server, skipped)
	}
	fmt.Fprintln(out)
	fmt.Fprintf(out, "An agent token: lifecycle token --role agent --session %s   (from this directory, or with --workspace %s)\n", o.session, ws)
	fmt.Fprintf(out, "Submit:         lifecycle submit --session %s --tool Bash --args '{\"command\":\"ls\"}' --token <agent token>\n", o.session)
	fmt.Fprintf(out, "Executions:     %s\n", listExecutionsCommand(es.SFNEndpoint, es.Engine.StateMachineArn()))
	fmt.Fprintf(out, "                (the engine checks no credentials; without an AWS configuration, prefix %s)\n", fakeAWSEnv)
	fmt.Fprintf(out, "Stop with Ctrl-C (an orderly stop pauses running work for automatic continuation).\n")

	sig, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	select {
	case <-sig.Done():
	case err := <-serveErr:
		if err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("api server stopped", "error", err)
		}
	}
	fmt.Fprintln(out, "stopping...")
	// Held MCP calls end first (their actions stay durable), so the HTTP
	// server's shutdown does not wait for them.
	gw.Close()
	sctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	srv.Shutdown(sctx)
	return es.Close(sctx)
}

// fakeAWSEnv is what the AWS CLI needs to sign a request when no AWS
// configuration exists; the embedded engine checks neither.
const fakeAWSEnv = "AWS_DEFAULT_REGION=us-east-1 AWS_ACCESS_KEY_ID=local AWS_SECRET_ACCESS_KEY=local"

// listExecutionsCommand is the ready-to-paste AWS CLI line the banner
// prints, listing the embedded engine's executions.
func listExecutionsCommand(endpoint, stateMachineArn string) string {
	return "aws stepfunctions list-executions --endpoint-url " + endpoint + " --state-machine-arn " + stateMachineArn
}
