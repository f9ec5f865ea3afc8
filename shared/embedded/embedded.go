package embedded

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sfn"

	"github.com/openprogram/lifecycle/shared/actionflow"
	"github.com/openprogram/lifecycle/shared/blobstore"
	"github.com/openprogram/lifecycle/shared/eventbus"
	"github.com/openprogram/lifecycle/shared/executor"
	"github.com/openprogram/lifecycle/shared/hosttools"
	"github.com/openprogram/lifecycle/shared/hostworker"
	"github.com/openprogram/lifecycle/shared/sfnclient"
	"github.com/openprogram/lifecycle/shared/sfnlocal"
	"github.com/openprogram/lifecycle/shared/store"
	"github.com/openprogram/lifecycle/shared/store/sqlitestore"
	"github.com/openprogram/lifecycle/statemachines"
)

// StateMachineName is the embedded state machine's name.
const StateMachineName = "action-lifecycle"

// Config configures the embedded stack.
type Config struct {
	// StateDir holds state.db and blobs/ (default ./.lifecycle).
	StateDir string
	// Workspace is where the host worker runs host tools (default ./workspace).
	// Empty with NoHostWorker set: no host worker.
	Workspace    string
	NoHostWorker bool
	// Decider decides permissions. Required.
	Decider actionflow.Decider
	// Routes add to executor.DefaultRoutes.
	Routes executor.Routes
	// Executors add to the built-in ones (noop).
	Executors map[string]actionflow.Executor
	// Store, if set, is used instead of opening StateDir/state.db (benchmarks
	// wrap it to meter usage). The stack does not close it.
	Store store.Store
	// WrapStore, if set, wraps the opened store (e.g. metering).
	WrapStore func(store.Store) store.Store
	// EngineClock drives the engine's timers (default: system clock).
	EngineClock sfnlocal.Clock
	// OnStatusChange also receives the engine's status-change events.
	OnStatusChange func(ctx context.Context, ev sfnlocal.StatusChangeEvent)
	// Concurrency of the engine's function invocations (default 64).
	Concurrency int
	Logger      *slog.Logger
	// ApprovalTimeout must match the ASL's AwaitApproval TimeoutSeconds (default 24h).
	ApprovalTimeout time.Duration
	// WrapFunction, if set, wraps each function the engine invokes (the
	// benchmarks count invocations with it).
	WrapFunction func(name string, f sfnlocal.LambdaFunc) sfnlocal.LambdaFunc
}

// Stack is the running embedded lifecycle.
type Stack struct {
	Store     store.Store
	Service   *actionflow.Service
	Engine    *sfnlocal.Engine
	Bus       *eventbus.Bus
	SFN       *sfn.Client
	SFNClient *sfnclient.Client
	// SFNEndpoint is the engine's loopback URL (AWS_ENDPOINT_URL_SFN).
	SFNEndpoint string
	Host        *hostworker.Worker

	ownStore  bool
	sfnServer *http.Server
	cancel    context.CancelFunc
	wg        sync.WaitGroup
	log       *slog.Logger
	hostWake  chan struct{}
}

// FunctionARN is the ARN the embedded engine uses for a lifecycle function.
func FunctionARN(name string) string {
	return "arn:aws:lambda:us-east-1:123456789012:function:lifecycle-" + name
}

// Start opens the store, builds the service and the engine, resumes stored
// executions and starts the host worker.
func Start(ctx context.Context, cfg Config) (*Stack, error) {
	if cfg.Decider == nil {
		return nil, errors.New("embedded: Config.Decider is required")
	}
	if cfg.StateDir == "" {
		cfg.StateDir = ".lifecycle"
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	s := &Stack{log: cfg.Logger, hostWake: make(chan struct{}, 1)}
	if cfg.Store != nil {
		s.Store = cfg.Store
	} else {
		if err := os.MkdirAll(cfg.StateDir, 0o755); err != nil {
			return nil, fmt.Errorf("state dir: %w", err)
		}
		st, err := sqlitestore.Open(filepath.Join(cfg.StateDir, "state.db"))
		if err != nil {
			return nil, fmt.Errorf("open store: %w", err)
		}
		s.Store, s.ownStore = st, true
	}
	if cfg.WrapStore != nil {
		s.Store = cfg.WrapStore(s.Store)
	}
	fail := func(err error) (*Stack, error) {
		s.Close(context.Background())
		return nil, err
	}

	// The engine's API listens first, so the client (and the service that
	// uses it) can be built before the engine that runs the service's handlers.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fail(fmt.Errorf("listen for the engine API: %w", err))
	}
	s.SFNEndpoint = "http://" + ln.Addr().String()
	s.SFN = sfn.New(sfn.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(s.SFNEndpoint),
		Credentials:  aws.AnonymousCredentials{},
		HTTPClient:   &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 256}},
	})

	s.Bus = eventbus.NewBus()
	executors := map[string]actionflow.Executor{executor.KindNoop: executor.Noop{}}
	for k, v := range cfg.Executors {
		executors[k] = v
	}
	routes := executor.DefaultRoutes.Merge(cfg.Routes)
	smArn := "arn:aws:states:us-east-1:123456789012:stateMachine:" + StateMachineName
	s.SFNClient = &sfnclient.Client{SFN: s.SFN, StateMachineARN: smArn}
	s.Service, err = actionflow.New(actionflow.Config{
		Store: s.Store, Decider: cfg.Decider, Router: routes, Executors: executors,
		Starter: s.SFNClient, Tasks: s.SFNClient, Publisher: s.Bus,
		Blobs: blobstore.Dir{Root: filepath.Join(cfg.StateDir, "blobs")}, Logger: cfg.Logger,
		ApprovalTimeout: cfg.ApprovalTimeout, Notify: s.Bus.Notify,
	})
	if err != nil {
		ln.Close()
		return fail(err)
	}

	functions := map[string]sfnlocal.LambdaFunc{}
	subs := map[string]string{}
	handlers := map[string]any{
		"authorize": s.Service.Authorize,
		"approval":  s.Service.ApprovalStep,
		"dispatch":  s.dispatchAndWake,
		"record":    s.Service.Record,
		"project":   s.Service.Project,
	}
	for placeholder, name := range statemachines.Functions {
		h, ok := handlers[name]
		if !ok {
			ln.Close()
			return fail(fmt.Errorf("no handler for function %s", name))
		}
		arn := FunctionARN(name)
		subs[placeholder] = arn
		functions[arn] = sfnlocal.Handler(h)
		if cfg.WrapFunction != nil {
			functions[arn] = cfg.WrapFunction(name, functions[arn])
		}
	}
	s.Engine, err = sfnlocal.New(sfnlocal.Config{
		Store: s.Store, Definition: statemachines.ActionLifecycle, Substitutions: subs,
		StateMachineName: StateMachineName, Functions: functions, Clock: cfg.EngineClock,
		Concurrency: cfg.Concurrency, Logger: cfg.Logger, OnStatusChange: cfg.OnStatusChange,
	})
	if err != nil {
		ln.Close()
		return fail(fmt.Errorf("engine: %w", err))
	}
	if got := s.Engine.StateMachineArn(); got != smArn {
		ln.Close()
		return fail(fmt.Errorf("engine state machine ARN %s, want %s", got, smArn))
	}
	s.sfnServer = &http.Server{Handler: s.Engine.Handler(), ReadHeaderTimeout: 10 * time.Second}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		if err := s.sfnServer.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.log.Error("engine API stopped", "error", err)
		}
	}()
	if err := s.Engine.Start(ctx); err != nil {
		return fail(fmt.Errorf("resume executions: %w", err))
	}

	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	s.cancel = cancel
	if !cfg.NoHostWorker {
		ws := cfg.Workspace
		if ws == "" {
			ws = "workspace"
		}
		if err := os.MkdirAll(ws, 0o755); err != nil {
			return fail(fmt.Errorf("workspace: %w", err))
		}
		s.Host = &hostworker.Worker{Host: hostworker.Direct{Service: s.Service, Wake: s.hostWake},
			Runner: hosttools.Runner{Workspace: ws}, Log: cfg.Logger, Poll: 2 * time.Second}
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			s.Host.Run(runCtx)
		}()
	}
	return s, nil
}

// dispatchAndWake runs the dispatch step and wakes the host worker after a
// host task is published.
func (s *Stack) dispatchAndWake(ctx context.Context, in actionflow.StepInput) (actionflow.DispatchOutput, error) {
	out, err := s.Service.Dispatch(ctx, in)
	if in.Mode == "publish" && err == nil {
		select {
		case s.hostWake <- struct{}{}:
		default:
		}
	}
	return out, err
}

// Close stops the host worker and the engine and closes the store.
func (s *Stack) Close(ctx context.Context) error {
	if s.cancel != nil {
		s.cancel()
	}
	var errs []error
	if s.Engine != nil {
		errs = append(errs, s.Engine.Close(ctx))
	}
	if s.sfnServer != nil {
		errs = append(errs, s.sfnServer.Shutdown(ctx))
	}
	s.wg.Wait()
	if s.ownStore && s.Store != nil {
		errs = append(errs, s.Store.Close())
	}
	return errors.Join(errs...)
}
