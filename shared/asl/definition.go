package asl

import "time"

// StateType is the Type of a state. Only the implemented types exist here.
type StateType string

const (
	TypeTask    StateType = "Task"
	TypeChoice  StateType = "Choice"
	TypePass    StateType = "Pass"
	TypeWait    StateType = "Wait"
	TypeSucceed StateType = "Succeed"
	TypeFail    StateType = "Fail"
)

// StateMachine is a parsed, validated definition.
type StateMachine struct {
	Comment string
	StartAt string
	// TimeoutSeconds bounds the whole execution (0: unbounded).
	TimeoutSeconds int64
	States         map[string]*State
}

// ResourceKind classifies the Resource of a Task state.
type ResourceKind int

const (
	// ResourceLambdaARN: the Resource is a Lambda function ARN; the result is
	// the function's response.
	ResourceLambdaARN ResourceKind = iota + 1
	// ResourceLambdaInvoke: arn:aws:states:::lambda:invoke; the result is
	// {"ExecutedVersion", "Payload", "StatusCode"}.
	ResourceLambdaInvoke
	// ResourceLambdaInvokeWait: arn:aws:states:::lambda:invoke.waitForTaskToken;
	// the function is invoked, its response ignored, and the result is the
	// output given to SendTaskSuccess.
	ResourceLambdaInvokeWait
)

// Resource ARNs of the optimized Lambda integration.
const (
	ResourceARNLambdaInvoke     = "arn:aws:states:::lambda:invoke"
	ResourceARNLambdaInvokeWait = "arn:aws:states:::lambda:invoke.waitForTaskToken"
)

// State is one state of the machine. Fields that a type does not have stay
// zero; Parse has already refused fields a type does not allow.
type State struct {
	Name    string
	Type    StateType
	Comment string

	Next string
	End  bool

	// InputPath and OutputPath: nil when absent (meaning "$"); NullInput /
	// NullOutput when given as JSON null (meaning {}).
	InputPath  *Path
	NullInput  bool
	OutputPath *Path
	NullOutput bool

	// Parameters (Task, Pass) and ResultSelector (Task) templates; nil when absent.
	Parameters     *Template
	ResultSelector *Template
	// ResultPath: nil when absent (meaning "$"); NullResult when JSON null
	// (the result is discarded and the input passed through).
	ResultPath *Path
	NullResult bool

	// Pass
	Result    any
	HasResult bool

	// Task
	Resource     string
	ResourceKind ResourceKind
	// FunctionARN is the Lambda function: the Resource itself for
	// ResourceLambdaARN, Parameters.FunctionName for the lambda:invoke forms.
	FunctionARN string
	// Payload is Parameters.Payload of the lambda:invoke forms (Parameters
	// is then only the envelope {FunctionName, Payload}).
	Payload          *Template
	TimeoutSeconds   int64 // 0: none
	HeartbeatSeconds int64 // 0: none
	Retry            []*Retrier
	Catch            []*Catcher

	// Choice
	Choices []*ChoiceRule
	Default string

	// Wait: exactly one of these.
	Seconds       int64
	HasSeconds    bool
	SecondsPath   *Path
	Timestamp     time.Time
	HasTimestamp  bool
	TimestampPath *Path

	// Fail: Error/Cause literals or ErrorPath/CausePath (path or intrinsic).
	Error     string
	Cause     string
	ErrorPath *Expr
	CausePath *Expr
}

// Expr is a value computed from a path or an intrinsic function.
type Expr struct {
	path *Path
	call *Intrinsic
}

// Eval computes the value.
func (e *Expr) Eval(data any, ctx ContextFunc) (any, error) {
	if e.path != nil {
		return e.path.Get(data, ctx)
	}
	return e.call.Eval(data, ctx)
}

// Retrier is one element of a Task state's Retry.
type Retrier struct {
	ErrorEquals     []string
	IntervalSeconds int64   // default 1
	MaxAttempts     int64   // default 3; 0 means never retry
	BackoffRate     float64 // default 2.0
	MaxDelaySeconds int64   // 0: no cap
	// JitterStrategy is "FULL" or "NONE" (default).
	JitterStrategy string
}

// Catcher is one element of a Task state's Catch.
type Catcher struct {
	ErrorEquals []string
	Next        string
	// ResultPath: nil when absent (meaning "$": the error output replaces the
	// input); NullResult when JSON null (the input passes through unchanged).
	ResultPath *Path
	NullResult bool
}
