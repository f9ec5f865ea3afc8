package httpapi

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/openprogram/lifecycle/shared/ids"
	"github.com/openprogram/lifecycle/shared/machineview"
)

// Paging of GET /v1/actions/{action_id}/machine's events.
const (
	DefaultMachinePageSize = 100
	MaxMachinePageSize     = 1000
)

// MachineView is an action's state machine execution as a console shows
// it: the definition, the status, the path taken and the current state
// (from the whole history), and one page of the event history.
type MachineView struct {
	ActionID        ids.ActionID    `json:"action_id"`
	ExecutionARN    string          `json:"execution_arn"`
	StateMachineARN string          `json:"state_machine_arn"`
	Status          string          `json:"status"`
	StartDate       time.Time       `json:"start_date"`
	StopDate        *time.Time      `json:"stop_date,omitempty"`
	Error           string          `json:"error,omitempty"`
	Cause           string          `json:"cause,omitempty"`
	Definition      json.RawMessage `json:"definition"`
	machineview.Analysis
	// EventCount is the length of the whole history.
	EventCount int `json:"event_count"`
	// Events is one page of the history, oldest first.
	Events        []machineview.Event `json:"events"`
	NextPageToken string              `json:"next_page_token,omitempty"`
	Links         *ActionLinks        `json:"links,omitempty"`
}

// ActionLinks are where an action's execution can be looked at: the
// Activity UI's console view (when this API serves the UI), the API route
// of that view, and in AWS the Step Functions console of the execution and
// the CloudWatch log groups of the functions and the state machine.
// Relative links are relative to the API's base URL.
type ActionLinks struct {
	Console    string    `json:"console,omitempty"`
	Machine    string    `json:"machine"`
	AWSConsole string    `json:"aws_console,omitempty"`
	Logs       []LogLink `json:"logs,omitempty"`
}

// LogLink is one CloudWatch log group, opened at the action's lines.
type LogLink struct {
	Function string `json:"function"`
	LogGroup string `json:"log_group"`
	URL      string `json:"url"`
}

// AWSConsole builds links to the AWS consoles (the api function sets it
// from the stack's environment; lifecycle serve leaves it nil).
type AWSConsole struct {
	// Region of the state machine (the Lambda runtime's AWS_REGION).
	Region string
	// LogGroups: function name (and "states" for the state machine) to
	// its log group name, in the order to list them.
	LogGroups []LogGroup
}

// LogGroup names one function's log group.
type LogGroup struct{ Function, Name string }

// ParseLogGroups reads "function=group,function=group" (the api function's
// LIFECYCLE_LOG_GROUPS).
func ParseLogGroups(s string) ([]LogGroup, error) {
	var out []LogGroup
	for _, part := range strings.Split(s, ",") {
		if part = strings.TrimSpace(part); part == "" {
			continue
		}
		fn, group, ok := strings.Cut(part, "=")
		if !ok || fn == "" || group == "" {
			return nil, errors.New("log group " + strconv.Quote(part) + ": want function=log-group-name")
		}
		out = append(out, LogGroup{Function: fn, Name: group})
	}
	return out, nil
}

// links are the action's links; nil when nothing reads executions.
func (h *api) links(a ids.ActionID) *ActionLinks {
	if h.cfg.Machines == nil {
		return nil
	}
	l := &ActionLinks{Machine: "/v1/actions/" + url.PathEscape(string(a)) + "/machine"}
	if !h.cfg.NoUI {
		l.Console = "/ui/machine.html#action=" + url.QueryEscape(string(a))
	}
	if c := h.cfg.AWSConsole; c != nil && c.Region != "" {
		l.AWSConsole = StepFunctionsConsoleURL(c.Region, h.cfg.Machines.ExecutionARN(a))
		for _, g := range c.LogGroups {
			l.Logs = append(l.Logs, LogLink{Function: g.Function, LogGroup: g.Name, URL: LogGroupURL(c.Region, g.Name, string(a))})
		}
	}
	return l
}

// StepFunctionsConsoleURL is the Step Functions console page of an execution.
func StepFunctionsConsoleURL(region, executionARN string) string {
	return "https://" + region + ".console.aws.amazon.com/states/home?region=" + region + "#/v2/executions/details/" + executionARN
}

// LogGroupURL is the CloudWatch console page of a log group's events,
// filtered on a term. The console reads its fragment with "$" in place of
// "%" (a value is URL-escaped, then its escapes are written with "$").
func LogGroupURL(region, group, term string) string {
	dollar := func(s string) string { return strings.ReplaceAll(url.QueryEscape(s), "%", "$25") }
	frag := "logsV2:log-groups/log-group/" + dollar(group) + "/log-events"
	if term != "" {
		frag += "$3FfilterPattern$3D" + dollar(`"`+term+`"`)
	}
	return "https://" + region + ".console.aws.amazon.com/cloudwatch/home?region=" + region + "#" + frag
}

// machine answers GET /v1/actions/{action_id}/machine.
func (h *api) machine(w http.ResponseWriter, r *http.Request, c *call) error {
	if h.cfg.Machines == nil {
		return &requestError{Status: http.StatusNotImplemented, Code: "not_implemented", Msg: "no state machine reader is configured"}
	}
	size := DefaultMachinePageSize
	if s := r.URL.Query().Get("page_size"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > MaxMachinePageSize {
			return badRequest("invalid_field", "page_size", "page_size must be a whole number from 1 to "+strconv.Itoa(MaxMachinePageSize))
		}
		size = n
	}
	start := 0
	if tok := r.URL.Query().Get("page_token"); tok != "" {
		n, ok := decodeEventsToken(tok)
		if !ok {
			return badRequest("invalid_field", "page_token", "page_token is not a token this route issued")
		}
		start = n
	}
	a := c.t.Action.ActionID
	x, err := h.cfg.Machines.ReadExecution(r.Context(), a)
	if errors.Is(err, machineview.ErrNoExecution) {
		return &requestError{Status: http.StatusNotFound, Code: "not_found", Msg: "the action " + string(a) + " has no state machine execution (it did not start)"}
	}
	if err != nil {
		return err
	}
	def, err := machineview.ParseDefinition(x.Definition)
	if err != nil {
		return err
	}
	machineview.HideTaskTokens(x.Definition, x.Events)
	if start > len(x.Events) {
		return badRequest("invalid_field", "page_token", "page_token is past the end of the history")
	}
	end := min(start+size, len(x.Events))
	v := MachineView{ActionID: a, ExecutionARN: x.ExecutionARN, StateMachineARN: x.StateMachineARN, Status: x.Status,
		StartDate: x.StartDate, StopDate: x.StopDate, Error: x.Error, Cause: x.Cause, Definition: x.Definition,
		Analysis: machineview.Analyze(def, x.Status, x.Events), EventCount: len(x.Events),
		Events: x.Events[start:end], Links: h.links(a)}
	if v.Events == nil {
		v.Events = []machineview.Event{}
	}
	if end < len(x.Events) {
		v.NextPageToken = encodeEventsToken(end)
	}
	writeJSON(w, http.StatusOK, v)
	return nil
}

func encodeEventsToken(offset int) string {
	return base64.RawURLEncoding.EncodeToString([]byte("events:" + strconv.Itoa(offset)))
}

func decodeEventsToken(tok string) (int, bool) {
	b, err := base64.RawURLEncoding.DecodeString(tok)
	if err != nil {
		return 0, false
	}
	s, ok := strings.CutPrefix(string(b), "events:")
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(s)
	return n, err == nil && n >= 0
}
