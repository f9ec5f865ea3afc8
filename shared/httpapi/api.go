package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"log/slog"
	"net/http"
	"time"

	"github.com/openprogram/lifecycle/shared/actionflow"
	"github.com/openprogram/lifecycle/shared/activity"
	"github.com/openprogram/lifecycle/shared/ids"
	"github.com/openprogram/lifecycle/shared/machineview"
	"github.com/openprogram/lifecycle/shared/modelreq"
	"github.com/openprogram/lifecycle/shared/policystore"
	"github.com/openprogram/lifecycle/shared/process"
	"github.com/openprogram/lifecycle/shared/replay"
)

// Defaults of Config.
const (
	DefaultMaxWait      = 30 * time.Second
	DefaultPollInterval = time.Second
	DefaultHeartbeat    = 15 * time.Second
)

// Authenticator turns a request into its principal: *auth.Issuer locally
// (bearer JWT), auth.GatewayClaims in Lambda. An error is 401.
type Authenticator interface {
	Authenticate(r *http.Request) (actionflow.Principal, error)
}

// Policies stores session policies (*policystore.Store).
type Policies interface {
	Get(ctx context.Context, session ids.SessionID) (policystore.Document, error)
	// PutRecorded replaces the policy, writing it through record (which
	// makes the change one transaction with its policy.updated event).
	PutRecorded(ctx context.Context, session ids.SessionID, expected int64, policy json.RawMessage, settings policystore.Settings,
		by actionflow.Principal, record policystore.Recorder) (policystore.Document, error)
}

// CommandRequest is a control command as the API received it.
type CommandRequest struct {
	ExecutionID     ids.ExecutionID      `json:"execution_id"`
	CommandID       ids.CommandID        `json:"command_id"`
	Type            string               `json:"type"`
	ExpectedVersion int64                `json:"expected_version"`
	Payload         json.RawMessage      `json:"payload,omitempty"`
	Principal       actionflow.Principal `json:"principal"`
}

// CommandResult is what the command service says about a command:
// "accepted" (saved), "applied" (took effect) or "rejected" (with reason).
type CommandResult struct {
	CommandID   ids.CommandID   `json:"command_id"`
	ExecutionID ids.ExecutionID `json:"execution_id"`
	Type        string          `json:"type"`
	Status      string          `json:"status"`
	Reason      string          `json:"reason,omitempty"`
	// ExecutionVersion is the execution's version after the command.
	ExecutionVersion int64 `json:"execution_version"`
	// ChildExecutionID is the execution a Fork or Retry created.
	ChildExecutionID ids.ExecutionID `json:"child_execution_id,omitempty"`
	// Descendants are the execution descendants an applied Cancel reached.
	Descendants []CancelledDescendant `json:"descendants,omitempty"`
}

// CancelledDescendant is one execution descendant a Cancel reached: the
// Cancel saved on it (derived from the ancestor's) and that Cancel's
// status, or status "cancelling" when its own cancellation was in effect.
type CancelledDescendant struct {
	ExecutionID ids.ExecutionID `json:"execution_id"`
	ParentID    ids.ExecutionID `json:"parent_id"`
	Depth       int             `json:"depth"`
	CommandID   ids.CommandID   `json:"command_id,omitempty"`
	Status      string          `json:"status"`
}

// Controller is the command service: it saves a command (idempotent by
// command id, stale expected_version refused with a *actionflow.ConflictError)
// and says which controls an execution advertises.
type Controller interface {
	Command(ctx context.Context, req CommandRequest) (CommandResult, error)
	Controls(ctx context.Context, e actionflow.Execution) ([]string, error)
}

// Tool is one model-facing tool.
type Tool struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	InputSchema json.RawMessage `json:"input_schema,omitempty"`
}

// ToolList is the tools a session's model may see under its live rules.
type ToolList struct {
	PolicyVersion string `json:"policy_version"`
	Tools         []Tool `json:"tools"`
}

// ToolLister filters the tool catalog against a session's live rules
// (the permission engine's VisibleTools).
type ToolLister interface {
	VisibleTools(ctx context.Context, session ids.SessionID) (ToolList, error)
}

// FactSource adds what the lifecycle records do not hold to the Activity
// view: open questions, pending commands, missing response records,
// running processes (the control service).
type FactSource interface {
	Facts(ctx context.Context, session ids.SessionID, recs actionflow.SessionRecords) (map[ids.ExecutionID]activity.Facts, error)
}

// Subscriber wakes waiters when events are appended (*eventbus.Bus fed by
// actionflow.Config.Notify). Waits work without it, by polling.
type Subscriber interface {
	Subscribe(filter func(actionflow.Event) bool) (<-chan actionflow.Event, func())
}

// Config wires the API. Service and Auth are required.
type Config struct {
	Service *actionflow.Service
	Auth    Authenticator
	// Policies defaults to a policystore over Service.Store() without a
	// validator (the document only has to be a JSON object).
	Policies Policies
	// Control nil: POST .../commands answers 501; executions advertise no controls.
	Control Controller
	// Tools nil: GET /v1/tools answers 501.
	Tools ToolLister
	// Facts nil: Activity uses lifecycle records only.
	Facts FactSource
	// Revisions nil: GET /v1/revisions answers 501.
	Revisions RevisionSource
	// Wake nil: waits poll every PollInterval.
	Wake   Subscriber
	Logger *slog.Logger
	Clock  func() time.Time
	// MaxBodyBytes bounds request bodies (default 256 KiB).
	MaxBodyBytes int64
	// MaxWait bounds ?wait= (default 30 s).
	MaxWait time.Duration
	// PollInterval is how often a wait re-reads the store (default 1 s).
	PollInterval time.Duration
	// Heartbeat is the interval of SSE keep-alive comments (default 15 s).
	Heartbeat time.Duration
	// DisableStreaming answers the events route with JSON batches even
	// without ?wait= (API Gateway cannot stream a Lambda response).
	DisableStreaming bool
	// UI is served at / and /ui/ (default: the embedded ui directory).
	UI fs.FS
	// NoUI leaves / and /ui/ unrouted (the Lambda API serves no UI).
	NoUI bool
	// Machines reads an action's state machine execution (sfnclient.Client).
	// nil: GET /v1/actions/{action_id}/machine answers 501 and actions
	// carry no links.
	Machines machineview.Reader
	// AWSConsole adds links to the AWS consoles to actions (in AWS).
	AWSConsole *AWSConsole
	// Dagre is the path of the graph layout library the UI's console view
	// loads (dagre.min.js; default: FindDagre). Empty after the default:
	// the view lists the path without drawing the graph.
	Dagre string
	// Replays runs and keeps policy replays (nil: the replay routes answer
	// 501, and no session can require a replay).
	Replays *replay.Replayer
	// Docs holds index.html, the API reference page served at /docs
	// whatever NoUI says (default: the embedded apidocs directory, which
	// has the page when `make api-docs` ran before the build).
	Docs fs.FS
}

type api struct {
	cfg Config
	svc *actionflow.Service
	log *slog.Logger
	mux *http.ServeMux

	// models is the model request ledger of svc (agents' reports, reads).
	models *modelreq.Ledger
	// procs are the managed processes of svc.
	procs *process.Service
	// docs is the API reference page (or why there is none).
	docs docsPage
}

// New builds the API handler.
func New(cfg Config) (http.Handler, error) {
	if cfg.Service == nil {
		return nil, errors.New("httpapi: Config.Service is required")
	}
	if cfg.Auth == nil {
		return nil, errors.New("httpapi: Config.Auth is required")
	}
	if cfg.Policies == nil {
		cfg.Policies = policystore.New(cfg.Service.Store(), nil)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Clock == nil {
		cfg.Clock = time.Now
	}
	if cfg.MaxBodyBytes <= 0 {
		cfg.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if cfg.MaxWait <= 0 {
		cfg.MaxWait = DefaultMaxWait
	}
	if cfg.PollInterval <= 0 {
		cfg.PollInterval = DefaultPollInterval
	}
	if cfg.Heartbeat <= 0 {
		cfg.Heartbeat = DefaultHeartbeat
	}
	if cfg.UI == nil && !cfg.NoUI {
		sub, err := fs.Sub(uiFiles, "ui")
		if err != nil {
			return nil, err
		}
		cfg.UI = sub
	}
	if cfg.Dagre == "" && !cfg.NoUI {
		cfg.Dagre = FindDagre()
	}
	if cfg.Docs == nil {
		sub, err := fs.Sub(apiDocs, "apidocs")
		if err != nil {
			return nil, err
		}
		cfg.Docs = sub
	}
	docs, err := loadDocs(cfg.Docs)
	if err != nil {
		return nil, err
	}
	h := &api{cfg: cfg, svc: cfg.Service, models: modelreq.ForFlow(cfg.Service), procs: process.ForFlow(cfg.Service), log: cfg.Logger, mux: http.NewServeMux(), docs: docs}
	h.routes()
	return h, nil
}

// Routes lists every /v1 route pattern (for the OpenAPI test and the infra).
func Routes() []string {
	h := &api{mux: http.NewServeMux()}
	var out []string
	for _, rt := range h.table() {
		out = append(out, rt.pattern)
	}
	return out
}

func (h *api) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if _, pattern := h.mux.Handler(r); pattern == "" {
		// Not found or wrong method: the mux's plain-text answer, as JSON.
		rec := &statusRecorder{header: http.Header{}}
		h.mux.ServeHTTP(rec, r)
		if allow := rec.header.Get("Allow"); allow != "" {
			w.Header().Set("Allow", allow)
		}
		status := rec.status
		code := "not_found"
		msg := "no route for " + r.Method + " " + r.URL.Path
		switch {
		case status == http.StatusMethodNotAllowed:
			code, msg = "method_not_allowed", r.Method+" is not allowed on "+r.URL.Path
		case status == 0 || status == http.StatusOK:
			status = http.StatusNotFound
		case status != http.StatusNotFound:
			code, msg = "bad_request", http.StatusText(status)
		}
		writeJSON(w, status, ErrorBody{Error: ErrorDetail{Code: code, Message: msg}})
		return
	}
	h.mux.ServeHTTP(w, r)
}

// statusRecorder captures the mux's fallback answer.
type statusRecorder struct {
	header http.Header
	status int
}

func (s *statusRecorder) Header() http.Header         { return s.header }
func (s *statusRecorder) Write(b []byte) (int, error) { return len(b), nil }
func (s *statusRecorder) WriteHeader(code int)        { s.status = code }

func (h *api) routes() {
	for _, rt := range h.table() {
		h.mux.Handle(rt.pattern, h.gate(rt))
	}
	h.mux.HandleFunc("GET /healthz", h.healthz)
	h.docsRoutes()
	if !h.cfg.NoUI {
		h.uiRoutes()
	}
}

func (h *api) healthz(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	// One read proves the store answers; a missing item is a healthy answer.
	if _, err := h.svc.Store().Get(ctx, policystore.Key("healthz")); err != nil && !isNotFound(err) {
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "unavailable"})
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}
