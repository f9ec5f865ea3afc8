package awsmode_test

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	ebtypes "github.com/aws/aws-sdk-go-v2/service/eventbridge/types"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/openprogram/lifecycle/shared/actionflow"
	"github.com/openprogram/lifecycle/shared/sfnlocal"
	"github.com/openprogram/lifecycle/shared/sfnlocal/lambdainvoke"
	"github.com/openprogram/lifecycle/shared/store/dynamostore/dynamotest"
	"github.com/openprogram/lifecycle/shared/store/sqlitestore"
	"github.com/openprogram/lifecycle/statemachines"
	"github.com/openprogram/lifecycle/tests/internal/harness"
)

// RIEEnv names the Runtime Interface Emulator binary (`make test` installs
// it under .tools/ and sets this).
const RIEEnv = "LIFECYCLE_AWS_RIE"

const (
	region    = "us-east-1"
	account   = "123456789012"
	machine   = "action-lifecycle"
	bus       = "lifecycle-projection"
	bucket    = "lifecycle-blobs"
	toolName  = "tickets"
	issuer    = "https://idp.awsmode.test/"
	audience  = "lifecycle-awsmode"
	projected = "openprogram.lifecycle"
)

func functionARN(name string) string {
	return "arn:aws:lambda:" + region + ":" + account + ":function:" + name
}

// spec is a function's deployment: the numbers of infra/stack/functions.go.
type spec struct {
	timeout     time.Duration
	memoryMB    int
	concurrency int
}

var specs = map[string]spec{
	"authorize": {30 * time.Second, 256, 3},
	"approval":  {10 * time.Second, 128, 2},
	"dispatch":  {840 * time.Second, 256, 3},
	"record":    {30 * time.Second, 256, 3},
	"project":   {30 * time.Second, 256, 3},
	"api":       {29 * time.Second, 256, 4},
	"recover":   {55 * time.Second, 256, 2},
}

// functionEnv is what the CDK stack (infra/stack/stack.go) sets on one
// function: the names in testdata/function-env.json (infra/stack's
// TestAWSModeEnvironmentIsTheStacks holds them equal to the synthesized
// template's), with this machine's values.
func functionEnv(name, table, stateMachineARN string) (map[string]string, error) {
	b, err := os.ReadFile(filepath.Join("testdata", "function-env.json"))
	if err != nil {
		return nil, err
	}
	var file struct {
		Common    []string            `json:"common"`
		Functions map[string][]string `json:"functions"`
	}
	if err := json.Unmarshal(b, &file); err != nil {
		return nil, fmt.Errorf("testdata/function-env.json: %w", err)
	}
	extra, ok := file.Functions[name]
	if !ok {
		return nil, fmt.Errorf("testdata/function-env.json has no entry for %s", name)
	}
	values := map[string]string{
		"LIFECYCLE_TABLE":                     table,
		"LIFECYCLE_BLOB_BUCKET":               bucket,
		"LIFECYCLE_EVENT_BUS":                 bus,
		"LIFECYCLE_LOG_LEVEL":                 "info",
		"LIFECYCLE_REVIEWER":                  "builtin",
		"LIFECYCLE_TOOL_FUNCTION_ARNS":        functionARN(toolName),
		"LIFECYCLE_STATE_MACHINE_ARN":         stateMachineARN,
		"LIFECYCLE_STATE_MACHINE_ALIAS_ARN":   stateMachineARN + ":live",
		"LIFECYCLE_STATE_MACHINE_VERSION_ARN": stateMachineARN + ":1", // published first by the stack below
		"LIFECYCLE_LOG_GROUPS":                "api=/aws/lambda/api,states=/aws/vendedlogs/states/action-lifecycle",
		"LIFECYCLE_JWT_ISSUER":                issuer,
		"LIFECYCLE_JWT_AUDIENCE":              audience,
	}
	env := map[string]string{}
	for _, k := range append(file.Common, extra...) {
		v, ok := values[k]
		if !ok {
			return nil, fmt.Errorf("the stack sets %s on %s, which this test has no value for", k, name)
		}
		env[k] = v
	}
	return env, nil
}

// stack is the lifecycle in AWS mode on this machine: the function
// binaries under the Runtime Interface Emulator behind a loopback Lambda
// Invoke API, the embedded Step Functions engine invoking them through it,
// DynamoDB on minidyn, EventBridge, S3 and SQS on moto, and API Gateway's
// stand-in in front of the api function.
type stack struct {
	t         *testing.T
	root      string
	dir       string
	bins      string
	toolDir   string
	lambda    *lambdaService
	lambdaURL string
	moto      string
	table     string
	engine    *sfnlocal.Engine
	sfnURL    string
	sfnDown   atomic.Bool
	gw        *gateway
	gwURL     string

	lambdaClient *lambda.Client
	sfn          *sfn.Client
	s3           *s3.Client
	sqs          *sqs.Client
	queueURL     string

	mu        sync.Mutex
	events    []actionflow.Event
	recovered []recoverCall
}

// recoverCall is one invocation of the recover function and its answer.
type recoverCall struct {
	trigger string
	out     json.RawMessage
	err     error
}

func static() aws.CredentialsProvider {
	return credentials.NewStaticCredentialsProvider("test", "test", "")
}

// rieBinary finds the emulator, or skips (fails when required).
func rieBinary(t *testing.T, root string) string {
	t.Helper()
	p := os.Getenv(RIEEnv)
	if p == "" {
		matches, _ := filepath.Glob(filepath.Join(root, ".tools", "aws-lambda-rie-*", "aws-lambda-rie"))
		if len(matches) > 0 {
			p = matches[len(matches)-1]
		}
	}
	if p == "" {
		why := "the Lambda Runtime Interface Emulator is not installed: run `make test-aws` (it go-installs it under .tools/) or set " + RIEEnv
		if os.Getenv(dynamotest.RequiredEnv) == "1" {
			t.Fatalf("%s (%s=1)", why, dynamotest.RequiredEnv)
		}
		t.Skip(why)
	}
	if fi, err := os.Stat(p); err != nil || fi.IsDir() || fi.Mode()&0o111 == 0 {
		t.Fatalf("%s=%s is not an executable file (%v)", RIEEnv, p, err)
	}
	return p
}

// binDir is where the binaries are built: a directory kept across runs
// (the user's cache directory), so that go build relinks only what
// changed; one per checkout, so that two checkouts never run each other's
// binaries; a fresh temporary directory when there is no cache directory.
func binDir(t *testing.T, root string) string {
	if c, err := os.UserCacheDir(); err == nil {
		sum := sha256.Sum256([]byte(root))
		d := filepath.Join(c, "openprogram-lifecycle", fmt.Sprintf("awsmode-bin-%x-linux-%s", sum[:6], runtime.GOARCH))
		if err := os.MkdirAll(d, 0o755); err == nil {
			return d
		}
	}
	return t.TempDir()
}

// build compiles every function's bootstrap, the lifecycle CLI and the
// tool function for this host (linux, its architecture), in one go build.
func build(root, out string) error {
	pkgs := []string{"./cmd/lifecycle", "./tests/awsmode/toolfn"}
	for name := range specs {
		pkgs = append(pkgs, "./functions/"+name)
	}
	// As scripts/build-functions.sh builds them, but for this host and
	// without -trimpath (which would compile everything again instead of
	// reusing the test build's cache).
	args := append([]string{"build", "-tags", "lambda.norpc", "-ldflags", "-s -w", "-o", out + string(filepath.Separator)}, pkgs...)
	cmd := exec.Command("go", args...)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "GOOS=linux", "GOARCH="+runtime.GOARCH, "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build %s: %v\n%s", strings.Join(pkgs, " "), err, b)
	}
	return nil
}

func serve(t *testing.T, h http.Handler) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(l)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if srv.Shutdown(ctx) != nil {
			srv.Close()
		}
	})
	return "http://" + l.Addr().String()
}

func newStack(t *testing.T) *stack {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skip("the Lambda Runtime Interface Emulator runs on Linux only")
	}
	root := harness.RepoRoot(t)
	rie := rieBinary(t, root)
	s := &stack{t: t, root: root, dir: t.TempDir()}
	s.bins = binDir(t, root)
	s.toolDir = filepath.Join(s.dir, "tool")
	logs := filepath.Join(s.dir, "logs")
	for _, d := range []string{s.toolDir, logs} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}

	// The slow parts at once: the build and moto's start.
	began := time.Now()
	built := make(chan error, 1)
	go func() { built <- build(root, s.bins) }()
	s.moto = dynamotest.Moto(t)
	ddb := dynamotest.New(t)
	s.table = ddb.Table

	// The moto side: the projection bus with a rule copying every lifecycle
	// event to a queue the test reads, and the blob bucket.
	ctx := context.Background()
	eb := eventbridge.New(eventbridge.Options{Region: region, BaseEndpoint: aws.String(s.moto), Credentials: static()})
	s.sqs = sqs.New(sqs.Options{Region: region, BaseEndpoint: aws.String(s.moto), Credentials: static()})
	s.s3 = s3.New(s3.Options{Region: region, BaseEndpoint: aws.String(s.moto), Credentials: static(), UsePathStyle: true})
	must(t, "create the bus", func() error {
		_, err := eb.CreateEventBus(ctx, &eventbridge.CreateEventBusInput{Name: aws.String(bus)})
		return err
	})
	q, err := s.sqs.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("projection-tap")})
	if err != nil {
		t.Fatal(err)
	}
	s.queueURL = aws.ToString(q.QueueUrl)
	must(t, "route the bus to the queue", func() error {
		if _, err := eb.PutRule(ctx, &eventbridge.PutRuleInput{Name: aws.String("tap"), EventBusName: aws.String(bus),
			EventPattern: aws.String(`{"source":["` + projected + `"]}`)}); err != nil {
			return err
		}
		_, err := eb.PutTargets(ctx, &eventbridge.PutTargetsInput{Rule: aws.String("tap"), EventBusName: aws.String(bus),
			Targets: []ebtypes.Target{{Id: aws.String("queue"), Arn: aws.String("arn:aws:sqs:" + region + ":" + account + ":projection-tap")}}})
		return err
	})
	must(t, "create the bucket", func() error {
		_, err := s.s3.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(bucket)})
		return err
	})

	// The Lambda service, and the engine invoking through it.
	s.lambda = newLambdaService(rie, logs)
	t.Cleanup(func() {
		if t.Failed() {
			s.lambda.logTail(t)
		}
	})
	t.Cleanup(s.lambda.close)
	s.lambdaURL = serve(t, s.lambda)
	// No client retries: the definition's Retry is the only retry.
	s.lambdaClient = lambda.New(lambda.Options{Region: region, BaseEndpoint: aws.String(s.lambdaURL), Credentials: static(), RetryMaxAttempts: 1})

	db, err := sqlitestore.Open(filepath.Join(s.dir, "sfn.db"))
	if err != nil {
		t.Fatal(err)
	}
	subs := map[string]string{}
	var arns []string
	for placeholder, fn := range statemachines.Functions {
		subs[placeholder] = functionARN(fn)
		arns = append(arns, functionARN(fn))
	}
	eng, err := sfnlocal.New(sfnlocal.Config{
		Store: db, Definition: statemachines.ActionLifecycle, Substitutions: subs, StateMachineName: machine,
		Region: region, AccountID: account,
		Functions:      lambdainvoke.Functions(s.lambdaClient, arns...),
		OnStatusChange: s.onStatusChange,
	})
	if err != nil {
		t.Fatal(err)
	}
	s.engine = eng
	if err := eng.Start(ctx); err != nil {
		t.Fatal(err)
	}
	api := eng.Handler()
	s.sfnURL = serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.sfnDown.Load() {
			w.Header().Set("Content-Type", "application/x-amz-json-1.0")
			w.WriteHeader(http.StatusServiceUnavailable)
			w.Write([]byte(`{"__type":"ServiceUnavailable","message":"Step Functions is unavailable (the test's outage)"}`))
			return
		}
		api.ServeHTTP(w, r)
	}))
	t.Cleanup(func() {
		cctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		eng.Close(cctx)
		db.Close()
	})
	s.sfn = sfn.New(sfn.Options{Region: region, BaseEndpoint: aws.String(s.sfnURL), Credentials: static()})
	// The deployment publishes a version of the machine, as the CDK stack
	// does; the api and recover functions register its revision at cold
	// start and start actions on that version.
	pub, err := s.sfn.PublishStateMachineVersion(ctx, &sfn.PublishStateMachineVersionInput{
		StateMachineArn: aws.String(eng.StateMachineArn()), Description: aws.String("this deployment")})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := aws.ToString(pub.StateMachineVersionArn), eng.StateMachineArn()+":1"; got != want {
		t.Fatalf("published %s, the functions are told %s", got, want)
	}

	if err := <-built; err != nil {
		t.Fatal(err)
	}
	t.Logf("built and moto up in %s", time.Since(began).Round(time.Millisecond))
	endpoints := map[string]string{
		"AWS_REGION": region, "AWS_DEFAULT_REGION": region,
		"AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test", "AWS_SESSION_TOKEN": "test",
		// Nothing from this machine's AWS configuration.
		"AWS_CONFIG_FILE": filepath.Join(s.dir, "no-aws-config"), "AWS_SHARED_CREDENTIALS_FILE": filepath.Join(s.dir, "no-aws-credentials"),
		"AWS_EC2_METADATA_DISABLED": "true",
		// The SDK's service-specific endpoint variables.
		"AWS_ENDPOINT_URL_DYNAMODB":    ddb.URL,
		"AWS_ENDPOINT_URL_SFN":         s.sfnURL,
		"AWS_ENDPOINT_URL_EVENTBRIDGE": s.moto,
		"AWS_ENDPOINT_URL_S3":          s.moto,
		"AWS_ENDPOINT_URL_LAMBDA":      s.lambdaURL,
	}
	for name, sp := range specs {
		env, err := functionEnv(name, s.table, eng.StateMachineArn())
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range endpoints {
			env[k] = v
		}
		s.lambda.add(name, filepath.Join(s.bins, name), env, sp.timeout, sp.memoryMB, sp.concurrency)
	}
	toolEnv := map[string]string{"TOOLFN_DIR": s.toolDir}
	for k, v := range endpoints {
		toolEnv[k] = v
	}
	s.lambda.add(toolName, filepath.Join(s.bins, "toolfn"), toolEnv, 120*time.Second, 128, 2)

	s.gw = &gateway{lambda: s.lambdaClient, function: functionARN("api"), key: []byte("awsmode-test-signing-key-0123456789"),
		issuer: issuer, audience: audience, apiID: "awsmode"}
	s.gwURL = serve(t, s.gw)
	return s
}

func must(t *testing.T, what string, fn func() error) {
	t.Helper()
	if err := fn(); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// onStatusChange is the EventBridge rule RecoverOnExecutionFailure
// (infra/stack/events.go): a FAILED, TIMED_OUT or ABORTED execution of this
// machine invokes the recover function with the event.
func (s *stack) onStatusChange(_ context.Context, ev sfnlocal.StatusChangeEvent) {
	switch ev.Detail.Status {
	case "FAILED", "TIMED_OUT", "ABORTED":
	default:
		return
	}
	if ev.Detail.StateMachineArn != s.engine.StateMachineArn() {
		return
	}
	go s.invokeRecover("status_change", ev)
}

func (s *stack) invokeRecover(trigger string, ev any) recoverCall {
	payload, err := json.Marshal(ev)
	call := recoverCall{trigger: trigger, err: err}
	if err == nil {
		var out *lambda.InvokeOutput
		out, call.err = s.lambdaClient.Invoke(context.Background(), &lambda.InvokeInput{FunctionName: aws.String(functionARN("recover")), Payload: payload})
		if call.err == nil {
			call.out = out.Payload
			if out.FunctionError != nil {
				call.err = fmt.Errorf("recover failed: %s", out.Payload)
			}
		}
	}
	s.mu.Lock()
	s.recovered = append(s.recovered, call)
	s.mu.Unlock()
	return call
}

// recoverCalls returns the recover invocations made for trigger so far.
func (s *stack) recoverCalls(trigger string) []recoverCall {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []recoverCall
	for _, c := range s.recovered {
		if c.trigger == trigger {
			out = append(out, c)
		}
	}
	return out
}

// drainEvents reads what the projection bus delivered to the queue so far.
func (s *stack) drainEvents(ctx context.Context) error {
	for {
		out, err := s.sqs.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(s.queueURL), MaxNumberOfMessages: 10, WaitTimeSeconds: 0})
		if err != nil {
			return err
		}
		if len(out.Messages) == 0 {
			return nil
		}
		for _, m := range out.Messages {
			var env struct {
				Source     string            `json:"source"`
				DetailType string            `json:"detail-type"`
				Detail     actionflow.Event  `json:"detail"`
				Extra      map[string]string `json:"-"`
			}
			if err := json.Unmarshal([]byte(aws.ToString(m.Body)), &env); err != nil {
				return fmt.Errorf("an event on the bus is not an EventBridge event: %v: %s", err, aws.ToString(m.Body))
			}
			if env.Source != projected || env.DetailType != env.Detail.Type {
				return fmt.Errorf("event with source %q and detail-type %q (detail type %q)", env.Source, env.DetailType, env.Detail.Type)
			}
			s.mu.Lock()
			s.events = append(s.events, env.Detail)
			s.mu.Unlock()
			if _, err := s.sqs.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(s.queueURL), ReceiptHandle: m.ReceiptHandle}); err != nil {
				return err
			}
		}
	}
}

// busEvents returns the events delivered for one action.
func (s *stack) busEvents(id string) []actionflow.Event {
	if err := s.drainEvents(context.Background()); err != nil {
		s.t.Fatalf("read the projection queue: %v", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []actionflow.Event
	for _, e := range s.events {
		if string(e.ActionID) == id {
			out = append(out, e)
		}
	}
	return out
}

// toolInvocations counts the tool function's runs for one action.
func (s *stack) toolInvocations(id string) int {
	m, _ := filepath.Glob(filepath.Join(s.toolDir, "invoked-"+id+"-*"))
	return len(m)
}

var errTimeout = errors.New("timed out")

// poll calls cond until it is true or the deadline passes (generous: a
// loaded 2-core machine starts processes slowly).
func poll(t *testing.T, timeout time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		ok, state := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %v after %s; last seen: %s", what, errTimeout, timeout, state)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
