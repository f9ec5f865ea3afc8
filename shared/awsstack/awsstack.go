package awsstack

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sfn"

	"github.com/openprogram/lifecycle/shared/actionflow"
	"github.com/openprogram/lifecycle/shared/blobstore/s3blobs"
	"github.com/openprogram/lifecycle/shared/decider"
	"github.com/openprogram/lifecycle/shared/eventbus/ebpublisher"
	"github.com/openprogram/lifecycle/shared/executor"
	"github.com/openprogram/lifecycle/shared/executor/lambdaexec"
	"github.com/openprogram/lifecycle/shared/modelreq"
	"github.com/openprogram/lifecycle/shared/permission"
	"github.com/openprogram/lifecycle/shared/permission/bedrockreview"
	"github.com/openprogram/lifecycle/shared/permission/riskreview"
	"github.com/openprogram/lifecycle/shared/policystore"
	"github.com/openprogram/lifecycle/shared/process"
	"github.com/openprogram/lifecycle/shared/revision"
	"github.com/openprogram/lifecycle/shared/sfnclient"
	"github.com/openprogram/lifecycle/shared/store/dynamostore"
)

// Env is the function's configuration.
type Env struct {
	Table, StateMachineARN, EventBus, BlobBucket string
	// StateMachineVersionARN is the state machine version this deployment
	// published (api, recover): its revision is registered at cold start,
	// and actions start on the version of their execution's revision.
	StateMachineVersionARN   string
	Reviewer, BedrockModelID string
	ToolFunctionARNs         []string
	ProjectRoot              string
	LogLevel                 slog.Level
}

// LoadEnv reads the environment; required names the variables this
// function cannot start without (LIFECYCLE_TABLE always).
func LoadEnv(required ...string) (Env, error) {
	var missing []string
	get := func(name string) string { return strings.TrimSpace(os.Getenv(name)) }
	for _, name := range append([]string{"LIFECYCLE_TABLE"}, required...) {
		if get(name) == "" {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		return Env{}, fmt.Errorf("missing environment variables: %s", strings.Join(missing, ", "))
	}
	e := Env{Table: get("LIFECYCLE_TABLE"), StateMachineARN: get("LIFECYCLE_STATE_MACHINE_ARN"), EventBus: get("LIFECYCLE_EVENT_BUS"),
		BlobBucket: get("LIFECYCLE_BLOB_BUCKET"), Reviewer: get("LIFECYCLE_REVIEWER"), BedrockModelID: get("LIFECYCLE_BEDROCK_MODEL_ID"),
		ProjectRoot: get("LIFECYCLE_PROJECT_ROOT"), StateMachineVersionARN: get("LIFECYCLE_STATE_MACHINE_VERSION_ARN")}
	if e.Reviewer == "" {
		e.Reviewer = "builtin"
	}
	if e.Reviewer != "builtin" && e.Reviewer != "bedrock" {
		return Env{}, fmt.Errorf("LIFECYCLE_REVIEWER=%q: want builtin or bedrock", e.Reviewer)
	}
	if e.Reviewer == "bedrock" && e.BedrockModelID == "" {
		return Env{}, errors.New("LIFECYCLE_REVIEWER=bedrock needs LIFECYCLE_BEDROCK_MODEL_ID")
	}
	if e.ProjectRoot == "" {
		e.ProjectRoot = "/workspace"
	}
	for _, arn := range strings.Split(get("LIFECYCLE_TOOL_FUNCTION_ARNS"), ",") {
		if arn = strings.TrimSpace(arn); arn != "" {
			e.ToolFunctionARNs = append(e.ToolFunctionARNs, arn)
		}
	}
	if lv := get("LIFECYCLE_LOG_LEVEL"); lv != "" {
		if err := e.LogLevel.UnmarshalText([]byte(lv)); err != nil {
			return Env{}, fmt.Errorf("LIFECYCLE_LOG_LEVEL=%q: %w", lv, err)
		}
	}
	return e, nil
}

// Deps are the services one function uses.
type Deps struct {
	Env     Env
	Store   *dynamostore.Store
	SFN     *sfnclient.Client
	Service *actionflow.Service
	Logger  *slog.Logger
}

// Policies loads session policies; nil reads the policies the API stores
// (package policystore, SESSION#<id>/POLICY), and a session without one
// has the default policy.
type Policies = decider.Policies

// New builds the clients and services (once per cold start).
func New(ctx context.Context, env Env, policies Policies) (*Deps, error) {
	log := slog.New(slog.NewJSONHandler(os.Stdout, &slog.HandlerOptions{Level: env.LogLevel}))
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		return nil, fmt.Errorf("load AWS config: %w", err)
	}
	st := dynamostore.New(dynamodb.NewFromConfig(cfg), env.Table)
	d := &Deps{Env: env, Store: st, Logger: log}
	if policies == nil {
		policies = policystore.Parsed[*permission.Policy]{Store: policystore.New(st, nil), Parse: permission.ParsePolicy}
	}
	// Completing a task token needs no state machine ARN (the token names
	// its execution): every function gets a completer. The dispatch
	// function, which cannot know the ARN (the machine refers to it),
	// answers a re-published host wait with it.
	sfnc := &sfnclient.Client{SFN: sfn.NewFromConfig(cfg), StateMachineARN: env.StateMachineARN}
	if env.StateMachineARN != "" {
		d.SFN = sfnc
	}
	// One ledger of model requests: the reviewer's calls, and the closing
	// of an ending execution's open ones (actionflow's RunWork).
	models := &modelreq.Ledger{Store: st}
	procs := &process.Service{Store: st}
	var classifier permission.Classifier = riskreview.New()
	if env.Reviewer == "bedrock" {
		// The built-in reviewer still blocks known risks and allows what it
		// proves safe; only the rest goes to the model. Each review is a
		// model request: accounted started/completed once.
		classifier = riskreview.New(riskreview.WithModel(modelreq.Classifier{Inner: bedrockreview.New(bedrockruntime.NewFromConfig(cfg), env.BedrockModelID),
			Ledger: models, Provider: "bedrock", Model: env.BedrockModelID}))
	}
	eng, err := permission.NewEngine(permission.Config{Classifier: classifier, Counters: st})
	if err != nil {
		return nil, fmt.Errorf("permission engine: %w", err)
	}
	routes := executor.DefaultRoutes
	tools := map[string]string{}
	for _, arn := range env.ToolFunctionARNs {
		name := arn[strings.LastIndex(arn, ":")+1:]
		tools[name] = arn
		routes = routes.Merge(executor.Routes{name: executor.KindLambda})
	}
	fc := actionflow.Config{
		Store:   st,
		Decider: &decider.Decider{Engine: eng, Policies: policies, ProjectRoot: env.ProjectRoot, WorkingDir: env.ProjectRoot, History: actionflow.History{Store: st}},
		Router:  routes,
		Executors: map[string]actionflow.Executor{
			executor.KindNoop:   executor.Noop{},
			executor.KindLambda: &lambdaexec.Executor{Client: lambda.NewFromConfig(cfg), Functions: tools},
		},
		Logger:  log,
		Metrics: &actionflow.EMFMetrics{W: os.Stdout},
		// Model requests, and the managed processes a cancelled execution
		// stops (their supervisors are remote host workers).
		RunWork: actionflow.RunClosers{models, procs},
		// The session policy's iteration limit and idle timeout of executions
		// that start without their own.
		Defaults: policystore.New(st, nil),
	}
	fc.Tasks = sfnc
	if d.SFN != nil {
		fc.Starter = d.SFN
	}
	if d.SFN != nil && env.StateMachineVersionARN != "" {
		// Revisions (issue 15): this deployment's revision is the one its
		// state machine version runs; executions keep or adopt revisions
		// and start on their versions, never on the unqualified machine.
		registry := revision.NewRegistry(st)
		if _, err := sfnclient.RegisterDeployment(ctx, d.SFN.SFN, registry, env.StateMachineVersionARN, time.Now()); err != nil {
			return nil, fmt.Errorf("register this deployment's revision: %w", err)
		}
		fc.Revisions = &sfnclient.Revisions{Client: d.SFN, Registry: registry}
	}
	if env.EventBus != "" {
		fc.Publisher = &ebpublisher.Publisher{Client: eventbridge.NewFromConfig(cfg), Bus: env.EventBus}
	}
	if env.BlobBucket != "" {
		fc.Blobs = &s3blobs.Blobs{Client: s3.NewFromConfig(cfg), Bucket: env.BlobBucket}
	}
	if d.Service, err = actionflow.New(fc); err != nil {
		return nil, err
	}
	models.Flow = d.Service
	procs.Flow, procs.Clock = d.Service, d.Service.Now
	return d, nil
}

// Must builds the dependencies or exits: a function that cannot be wired
// must fail its cold start loudly, not serve errors.
func Must(required ...string) *Deps {
	env, err := LoadEnv(required...)
	if err != nil {
		slog.Error("configuration", "error", err)
		os.Exit(1)
	}
	d, err := New(context.Background(), env, nil)
	if err != nil {
		slog.Error("wiring", "error", err)
		os.Exit(1)
	}
	return d
}
