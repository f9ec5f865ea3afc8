package sfnlocal

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/openprogram/lifecycle/shared/asl"
	"github.com/openprogram/lifecycle/shared/store"
)

// Handler serves the subset of the Step Functions API the project uses, in
// the AWS JSON 1.0 protocol (POST /, X-Amz-Target: AWSStepFunctions.<Op>),
// so the real aws-sdk-go-v2/service/sfn client talks to it unchanged when
// its endpoint (BaseEndpoint, AWS_ENDPOINT_URL_SFN) points here:
// StartExecution, DescribeExecution, GetExecutionHistory, StopExecution,
// SendTaskSuccess, SendTaskFailure, SendTaskHeartbeat, ListExecutions, and
// the read API consoles and toolkits use: ListStateMachines,
// DescribeStateMachine, DescribeStateMachineForExecution and
// ValidateStateMachineDefinition, and versions and aliases:
// PublishStateMachineVersion, ListStateMachineVersions,
// DeleteStateMachineVersion, CreateStateMachineAlias,
// UpdateStateMachineAlias, DescribeStateMachineAlias,
// ListStateMachineAliases, DeleteStateMachineAlias.
// Errors carry the "__type" the SDK turns into its typed errors
// (*types.ExecutionAlreadyExists, *types.TaskDoesNotExist, ...).
// Requests are not authenticated: serve it on loopback only.
func (e *Engine) Handler() http.Handler { return http.HandlerFunc(e.serveHTTP) }

// apiError is an error response of the API.
type apiError struct {
	status  int
	code    string
	message string
}

func (a *apiError) Error() string { return a.code + ": " + a.message }

func clientError(code, format string, args ...any) *apiError {
	return &apiError{status: http.StatusBadRequest, code: code, message: fmt.Sprintf(format, args...)}
}

// maxRequest bounds request bodies (inputs and outputs are at most 256 KiB).
const maxRequest = 1 << 20

func (e *Engine) serveHTTP(w http.ResponseWriter, r *http.Request) {
	op, found := strings.CutPrefix(r.Header.Get("X-Amz-Target"), "AWSStepFunctions.")
	var out any
	var err error
	switch {
	case r.Method != http.MethodPost || !found:
		err = clientError("UnknownOperationException", "expected POST with X-Amz-Target: AWSStepFunctions.<Operation>")
	case !e.isStarted():
		err = &apiError{status: http.StatusServiceUnavailable, code: "ServiceUnavailable", message: "the embedded Step Functions engine is not running"}
	default:
		body, rerr := io.ReadAll(io.LimitReader(r.Body, maxRequest+1))
		switch {
		case rerr != nil:
			err = clientError("SerializationException", "read request: %v", rerr)
		case len(body) > maxRequest:
			err = clientError("ValidationException", "request larger than %d bytes", maxRequest)
		default:
			out, err = e.dispatch(r.Context(), op, body)
		}
	}
	w.Header().Set("Content-Type", "application/x-amz-json-1.0")
	w.Header().Set("X-Amzn-Requestid", asl.NewUUID())
	if err != nil {
		var ae *apiError
		if !errors.As(err, &ae) {
			ae = &apiError{status: http.StatusInternalServerError, code: "InternalFailure", message: err.Error()}
			if errors.Is(err, store.ErrUnavailable) {
				ae.status, ae.code = http.StatusServiceUnavailable, "ServiceUnavailable"
			}
			e.log.Error("sfnlocal: API request failed", "operation", op, "err", err)
		}
		w.Header().Set("X-Amzn-Errortype", ae.code)
		w.WriteHeader(ae.status)
		_ = json.NewEncoder(w).Encode(map[string]string{"__type": ae.code, "message": ae.message})
		return
	}
	_ = json.NewEncoder(w).Encode(out)
}

func (e *Engine) dispatch(ctx context.Context, op string, body []byte) (any, error) {
	decode := func(v any) error {
		if len(bytes.TrimSpace(body)) == 0 {
			return nil
		}
		if err := json.Unmarshal(body, v); err != nil {
			return clientError("SerializationException", "decode %s request: %v", op, err)
		}
		return nil
	}
	switch op {
	case "StartExecution":
		var in startExecutionInput
		if err := decode(&in); err != nil {
			return nil, err
		}
		return e.startExecution(ctx, in)
	case "DescribeExecution":
		var in executionArnInput
		if err := decode(&in); err != nil {
			return nil, err
		}
		return e.describeExecution(ctx, in.ExecutionArn)
	case "GetExecutionHistory":
		var in historyInput
		if err := decode(&in); err != nil {
			return nil, err
		}
		return e.executionHistory(ctx, in)
	case "StopExecution":
		var in stopInput
		if err := decode(&in); err != nil {
			return nil, err
		}
		return e.stopExecution(ctx, in)
	case "SendTaskSuccess", "SendTaskFailure", "SendTaskHeartbeat":
		var in taskInput
		if err := decode(&in); err != nil {
			return nil, err
		}
		return struct{}{}, e.sendTask(ctx, op, in)
	case "ListExecutions":
		var in listInput
		if err := decode(&in); err != nil {
			return nil, err
		}
		return e.listExecutions(ctx, in)
	case "ListStateMachines":
		var in listStateMachinesInput
		if err := decode(&in); err != nil {
			return nil, err
		}
		return e.listStateMachines(in)
	case "DescribeStateMachine":
		var in stateMachineArnInput
		if err := decode(&in); err != nil {
			return nil, err
		}
		return e.describeStateMachine(ctx, in.StateMachineArn)
	case "DescribeStateMachineForExecution":
		var in executionArnInput
		if err := decode(&in); err != nil {
			return nil, err
		}
		return e.describeStateMachineForExecution(ctx, in.ExecutionArn)
	case "ListStateMachineVersions", "ListStateMachineAliases":
		var in listInput
		if err := decode(&in); err != nil {
			return nil, err
		}
		if op == "ListStateMachineAliases" {
			return e.listAliases(ctx, in)
		}
		return e.listVersions(ctx, in)
	case "PublishStateMachineVersion":
		var in publishInput
		if err := decode(&in); err != nil {
			return nil, err
		}
		return e.publishVersion(ctx, in)
	case "DeleteStateMachineVersion":
		var in struct {
			StateMachineVersionArn string `json:"stateMachineVersionArn"`
		}
		if err := decode(&in); err != nil {
			return nil, err
		}
		return e.deleteVersion(ctx, in.StateMachineVersionArn)
	case "CreateStateMachineAlias":
		var in createAliasInput
		if err := decode(&in); err != nil {
			return nil, err
		}
		return e.createAlias(ctx, in)
	case "UpdateStateMachineAlias":
		var in updateAliasInput
		if err := decode(&in); err != nil {
			return nil, err
		}
		return e.updateAlias(ctx, in)
	case "DescribeStateMachineAlias", "DeleteStateMachineAlias":
		var in aliasArnInput
		if err := decode(&in); err != nil {
			return nil, err
		}
		if op == "DeleteStateMachineAlias" {
			return e.deleteAlias(ctx, in.StateMachineAliasArn)
		}
		return e.describeAlias(ctx, in.StateMachineAliasArn)
	case "ValidateStateMachineDefinition":
		var in validateInput
		if err := decode(&in); err != nil {
			return nil, err
		}
		return validateDefinition(in)
	}
	return nil, clientError("UnknownOperationException", "operation %q is not implemented by the embedded Step Functions engine", op)
}

type startExecutionInput struct {
	StateMachineArn string  `json:"stateMachineArn"`
	Name            string  `json:"name"`
	Input           *string `json:"input"`
	TraceHeader     string  `json:"traceHeader"`
}

type executionArnInput struct {
	ExecutionArn string `json:"executionArn"`
}

type historyInput struct {
	ExecutionArn string `json:"executionArn"`
	MaxResults   int    `json:"maxResults"`
	NextToken    string `json:"nextToken"`
	ReverseOrder bool   `json:"reverseOrder"`
}

type stopInput struct {
	ExecutionArn string `json:"executionArn"`
	Error        string `json:"error"`
	Cause        string `json:"cause"`
}

type taskInput struct {
	TaskToken string  `json:"taskToken"`
	Output    *string `json:"output"`
	Error     string  `json:"error"`
	Cause     string  `json:"cause"`
}

type listInput struct {
	StateMachineArn string `json:"stateMachineArn"`
	StatusFilter    string `json:"statusFilter"`
	MaxResults      int    `json:"maxResults"`
	NextToken       string `json:"nextToken"`
}

func (e *Engine) checkStateMachine(arn string) error {
	switch {
	case arn == e.smArn:
		return nil
	case strings.HasPrefix(arn, "arn:") && strings.Contains(arn, ":stateMachine:"):
		return clientError("StateMachineDoesNotExist", "State Machine Does Not Exist: '%s'", arn)
	}
	return clientError("InvalidArn", "Invalid Arn: '%s'", arn)
}

// executionName extracts the name from an execution ARN of this machine.
func (e *Engine) executionName(arn string) (string, error) {
	prefix := e.ExecutionArn("")
	if name, ok := strings.CutPrefix(arn, prefix); ok && name != "" {
		return name, nil
	}
	if strings.HasPrefix(arn, "arn:") && strings.Contains(arn, ":execution:") {
		return "", clientError("ExecutionDoesNotExist", "Execution Does Not Exist: '%s'", arn)
	}
	return "", clientError("InvalidArn", "Invalid Arn: '%s'", arn)
}

func (e *Engine) startExecution(ctx context.Context, in startExecutionInput) (any, error) {
	t, err := e.parseTarget(in.StateMachineArn)
	if err != nil {
		return nil, err
	}
	name := in.Name
	if name == "" {
		name = asl.NewUUID()
	}
	if !validName(name) {
		return nil, clientError("InvalidName", "Invalid Name: '%s'", name)
	}
	input := "{}"
	if in.Input != nil {
		input = *in.Input
	}
	if len(input) > maxPayload {
		return nil, clientError("InvalidExecutionInput", "the input is %d bytes, more than %d", len(input), maxPayload)
	}
	value, err := asl.DecodeJSON([]byte(input))
	if err != nil {
		return nil, clientError("InvalidExecutionInput", "Invalid State Machine Execution Input: %v", err)
	}
	started := func(r *record) any {
		return map[string]any{"executionArn": e.ExecutionArn(r.Name), "startDate": epochSeconds(fromMS(r.Start))}
	}
	// Standard workflows: the same name and input while the execution runs
	// is the same request again; anything else under that name is refused.
	repeat := func(r *record) (any, error) {
		if r.Status == statusRunning && r.Input == input {
			return started(r), nil
		}
		return nil, clientError("ExecutionAlreadyExists", "Execution Already Exists: '%s'", e.ExecutionArn(name))
	}
	if x := e.lookup(name); x != nil {
		x.mu.Lock()
		r := x.rec
		x.mu.Unlock()
		return repeat(r)
	}

	// A version must not be deleted between this start reading it and the
	// execution being listed as running on it (deleteVersion counts those).
	// The lock is released before status events are delivered, so a
	// callback may start executions itself.
	release := func() {}
	if t != (target{}) {
		e.versionsMu.RLock()
		var once sync.Once
		release = func() { once.Do(e.versionsMu.RUnlock) }
		defer release()
	}
	d, digest, version, err := e.resolveStart(ctx, in.StateMachineArn, t)
	if err != nil {
		return nil, err
	}
	now := e.clock.Now()
	w := &record{StateMachine: e.smName, Name: name, Input: input, Start: ms(now), Status: statusRunning, Def: digest, Ver: version, Alias: t.alias}
	if d.sm.TimeoutSeconds > 0 {
		w.Deadline = ms(now) + d.sm.TimeoutSeconds*1000
	}
	w.addEvent(now, event{Type: "ExecutionStarted", ExecutionStarted: &execStartedDetails{Input: input, InputDetails: notTruncated, RoleArn: e.roleArn()}})
	running := e.statusEvent(w)
	x := &execution{input: value, sm: d.sm}
	x.mu.Lock()
	e.enter(x, w, d.sm.StartAt, value, now)
	if err := e.commit(ctx, x, w); err != nil {
		x.mu.Unlock()
		var ce *store.ConflictError
		if errors.As(err, &ce) {
			existing, derr := decodeRecord(ce.Existing)
			if derr != nil {
				return nil, derr
			}
			return repeat(existing)
		}
		return nil, fmt.Errorf("start execution %s: %w", name, err)
	}
	if w.Status == statusRunning {
		e.mu.Lock()
		e.execs[name] = x
		e.mu.Unlock()
	}
	release()
	x.pending = append([]StatusChangeEvent{running}, x.pending...)
	e.unlock(x)
	x.mu.Lock()
	e.kick(x)
	x.mu.Unlock()
	return started(w), nil
}

// load returns a snapshot of an execution's record: from memory while it
// runs here, else from the store.
func (e *Engine) load(ctx context.Context, name string) (*record, error) {
	if x := e.lookup(name); x != nil {
		x.mu.Lock()
		defer x.mu.Unlock()
		return x.rec.clone(), nil
	}
	it, err := e.store.Get(ctx, execKey(name))
	if errors.Is(err, store.ErrNotFound) {
		return nil, clientError("ExecutionDoesNotExist", "Execution Does Not Exist: '%s'", e.ExecutionArn(name))
	}
	if err != nil {
		return nil, fmt.Errorf("read execution %s: %w", name, err)
	}
	r, err := decodeRecord(it)
	if err != nil {
		return nil, err
	}
	if r.StateMachine != e.smName {
		return nil, clientError("ExecutionDoesNotExist", "Execution Does Not Exist: '%s'", e.ExecutionArn(name))
	}
	return r, nil
}

func (e *Engine) describeExecution(ctx context.Context, arn string) (any, error) {
	name, err := e.executionName(arn)
	if err != nil {
		return nil, err
	}
	r, err := e.load(ctx, name)
	if err != nil {
		return nil, err
	}
	out := map[string]any{
		"executionArn":    e.ExecutionArn(r.Name),
		"stateMachineArn": e.smArn,
		"name":            r.Name,
		"status":          r.Status,
		"startDate":       epochSeconds(fromMS(r.Start)),
		"input":           r.Input,
		"inputDetails":    map[string]bool{"included": true},
		"redriveCount":    0,
		"redriveStatus":   "NOT_REDRIVABLE",
	}
	e.addVersionFields(out, r)
	if r.Status != statusRunning {
		out["stopDate"] = epochSeconds(fromMS(r.Stop))
	}
	if r.Status == statusSucceeded {
		out["output"] = string(r.Output)
		out["outputDetails"] = map[string]bool{"included": true}
	}
	if r.Error != "" {
		out["error"] = r.Error
	}
	if r.Cause != "" {
		out["cause"] = r.Cause
	}
	return out, nil
}

// readLog returns every entry of an execution's log, in order.
func (e *Engine) readLog(ctx context.Context, name string) ([]logEntry, error) {
	var out []logEntry
	var after int64
	for {
		entries, err := e.store.ReadLog(ctx, histPrefix+name, after, store.MaxLimit)
		if err != nil {
			return nil, fmt.Errorf("read log of %s: %w", name, err)
		}
		for _, en := range entries {
			le, err := decodeLogEntry(en.Body)
			if err != nil {
				return nil, fmt.Errorf("decode log entry %d of %s: %w", en.Seq, name, err)
			}
			out = append(out, le)
			after = en.Seq
		}
		if len(entries) < store.MaxLimit {
			return out, nil
		}
	}
}

// history assembles an execution's events from its log and the events the
// record still holds, each id once, in order. (An entry may have been
// written twice when a process stopped between two writes.)
func (e *Engine) history(ctx context.Context, r *record) ([]json.RawMessage, error) {
	if err := r.unpack(); err != nil {
		return nil, err
	}
	entries, err := e.readLog(ctx, r.Name)
	if err != nil {
		return nil, err
	}
	byID := map[int64]json.RawMessage{}
	for _, le := range entries {
		for i, ev := range le.Events {
			byID[le.From+int64(i)] = ev
		}
	}
	first := r.firstEventID()
	for i, ev := range r.Events {
		byID[first+int64(i)] = ev
	}
	ids := make([]int64, 0, len(byID))
	for id := range byID {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	events := make([]json.RawMessage, len(ids))
	for i, id := range ids {
		events[i] = byID[id]
	}
	return events, nil
}

func (e *Engine) executionHistory(ctx context.Context, in historyInput) (any, error) {
	name, err := e.executionName(in.ExecutionArn)
	if err != nil {
		return nil, err
	}
	r, err := e.load(ctx, name)
	if err != nil {
		return nil, err
	}
	events, err := e.history(ctx, r)
	if err != nil {
		return nil, err
	}
	if in.ReverseOrder {
		for i, j := 0, len(events)-1; i < j; i, j = i+1, j-1 {
			events[i], events[j] = events[j], events[i]
		}
	}
	start := 0
	if in.NextToken != "" {
		start, err = decodePageToken(in.NextToken)
		if err != nil || start > len(events) {
			return nil, clientError("InvalidToken", "Invalid Token: '%s'", in.NextToken)
		}
	}
	size := in.MaxResults
	if size <= 0 || size > 1000 {
		size = 100
	}
	end := min(start+size, len(events))
	out := map[string]any{"events": events[start:end]}
	if end < len(events) {
		out["nextToken"] = encodePageToken(end)
	}
	return out, nil
}

func encodePageToken(offset int) string {
	return base64.RawURLEncoding.EncodeToString([]byte("page:" + strconv.Itoa(offset)))
}

func decodePageToken(tok string) (int, error) {
	b, err := base64.RawURLEncoding.DecodeString(tok)
	if err != nil {
		return 0, err
	}
	s, ok := strings.CutPrefix(string(b), "page:")
	if !ok {
		return 0, errors.New("not a page token")
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		return 0, errors.New("not a page token")
	}
	return n, nil
}

func (e *Engine) stopExecution(ctx context.Context, in stopInput) (any, error) {
	name, err := e.executionName(in.ExecutionArn)
	if err != nil {
		return nil, err
	}
	if x := e.lookup(name); x != nil {
		x.mu.Lock()
		if x.rec.Status == statusRunning {
			now := e.clock.Now()
			w := x.rec.clone()
			e.abort(x, w, in.Error, in.Cause, now)
			if err := e.commit(ctx, x, w); err != nil {
				x.mu.Unlock()
				return nil, fmt.Errorf("stop execution %s: %w", name, err)
			}
		}
		stop := x.rec.Stop
		e.unlock(x)
		return map[string]any{"stopDate": epochSeconds(fromMS(stop))}, nil
	}
	r, err := e.load(ctx, name)
	if err != nil {
		return nil, err
	}
	// Already closed: stopping it again changes nothing.
	return map[string]any{"stopDate": epochSeconds(fromMS(r.Stop))}, nil
}

// tokenError explains why a token is not (or no longer) valid.
func tokenError(r *record, token string) error {
	for _, c := range r.Closed {
		if c.Token == token && c.TimedOut {
			return clientError("TaskTimedOut", "Task Timed Out: '%s'", "the task timed out before it was completed")
		}
	}
	return clientError("TaskDoesNotExist", "Task Does Not Exist: the token is not the current token of a waiting task")
}

func (e *Engine) sendTask(ctx context.Context, op string, in taskInput) error {
	name, ok := tokenExecution(in.TaskToken)
	if !ok {
		return clientError("InvalidToken", "Invalid Token: the task token is malformed")
	}
	var o outcome
	switch op {
	case "SendTaskSuccess":
		output := ""
		if in.Output != nil {
			output = *in.Output
		}
		if len(output) > maxPayload {
			return clientError("InvalidOutput", "the output is %d bytes, more than %d", len(output), maxPayload)
		}
		if _, err := asl.DecodeJSON([]byte(output)); err != nil {
			return clientError("InvalidOutput", "Invalid Output: %v", err)
		}
		o = outcome{Success: true, Output: json.RawMessage(output)}
	case "SendTaskFailure":
		o = outcome{Error: in.Error, Cause: in.Cause}
	}
	x := e.lookup(name)
	if x == nil {
		r, err := e.load(ctx, name)
		if err != nil {
			var ae *apiError
			if errors.As(err, &ae) && ae.code == "ExecutionDoesNotExist" {
				return clientError("TaskDoesNotExist", "Task Does Not Exist: no execution holds this token")
			}
			return err
		}
		return tokenError(r, in.TaskToken)
	}
	x.mu.Lock()
	r := x.rec
	if r.Status != statusRunning || r.Token == "" || r.Token != in.TaskToken {
		err := tokenError(r, in.TaskToken)
		x.mu.Unlock()
		return err
	}
	now := e.clock.Now()
	st := x.sm.States[r.State]
	w := r.clone()
	switch {
	case op == "SendTaskHeartbeat":
		if st.HeartbeatSeconds == 0 {
			x.mu.Unlock()
			return nil
		}
		w.HeartbeatAt = ms(now) + st.HeartbeatSeconds*1000
	case r.Outcome != nil:
		x.mu.Unlock()
		return clientError("TaskDoesNotExist", "Task Does Not Exist: the task was already completed")
	case r.Phase == phaseRun:
		// The function that received the token is still running (or is to
		// be invoked again after a restart). Record the outcome durably; the
		// invocation loop applies it when the function returns.
		w.Outcome = &o
	default:
		x.gen++
		e.applyOutcome(x, w, st, o, now)
	}
	if err := e.commit(ctx, x, w); err != nil {
		x.mu.Unlock()
		return fmt.Errorf("%s for execution %s: %w", op, name, err)
	}
	e.kick(x)
	e.unlock(x)
	return nil
}

// listTokenPrefix marks ListExecutions' page tokens (the index key of the
// last execution listed), so a token from elsewhere is InvalidToken.
const listTokenPrefix = "list:"

func (e *Engine) listExecutions(ctx context.Context, in listInput) (any, error) {
	// A version or alias ARN lists the executions started on it.
	t, err := e.parseTarget(in.StateMachineArn)
	if err != nil {
		return nil, err
	}
	switch in.StatusFilter {
	case "", statusRunning, statusSucceeded, statusFailed, statusTimedOut, statusAborted:
	default:
		return nil, clientError("ValidationException", "invalid statusFilter %q", in.StatusFilter)
	}
	if in.MaxResults < 0 || in.MaxResults > 1000 {
		return nil, clientError("ValidationException", "maxResults must be between 0 and 1000, got %d", in.MaxResults)
	}
	size := in.MaxResults
	if size == 0 {
		size = 100
	}
	after := ""
	if in.NextToken != "" {
		b, err := base64.RawURLEncoding.DecodeString(in.NextToken)
		key, ok := strings.CutPrefix(string(b), listTokenPrefix)
		if err != nil || !ok || key == "" {
			return nil, clientError("InvalidToken", "Invalid Token: '%s'", in.NextToken)
		}
		after = key
	}
	items := []map[string]any{}
	next := ""
pages:
	for {
		page, err := e.store.QueryIndex(ctx, store.IndexSession, listPKPrefix+e.smName, store.QueryOptions{After: after, Limit: size, Descending: true})
		if err != nil {
			return nil, fmt.Errorf("list executions: %w", err)
		}
		for i, it := range page.Items {
			after = it.GSI1SK
			r, err := decodeRecord(it)
			if err != nil {
				return nil, err
			}
			if x := e.lookup(r.Name); x != nil {
				x.mu.Lock()
				r = x.rec.clone()
				x.mu.Unlock()
			}
			if in.StatusFilter != "" && r.Status != in.StatusFilter ||
				t.version != 0 && r.Ver != t.version || t.alias != "" && r.Alias != t.alias {
				continue
			}
			item := map[string]any{
				"executionArn":    e.ExecutionArn(r.Name),
				"stateMachineArn": e.smArn,
				"name":            r.Name,
				"status":          r.Status,
				"startDate":       epochSeconds(fromMS(r.Start)),
			}
			if r.Status != statusRunning {
				item["stopDate"] = epochSeconds(fromMS(r.Stop))
			}
			e.addVersionFields(item, r)
			items = append(items, item)
			if len(items) == size {
				if i < len(page.Items)-1 || page.Next != "" {
					next = after
				}
				break pages
			}
		}
		if page.Next == "" {
			break
		}
		after = page.Next
	}
	out := map[string]any{"executions": items}
	if next != "" {
		out["nextToken"] = base64.RawURLEncoding.EncodeToString([]byte(listTokenPrefix + next))
	}
	return out, nil
}

// addVersionFields adds what DescribeExecution and ListExecutions say of
// the version and alias an execution started on (absent when it started on
// the state machine itself, as on AWS).
func (e *Engine) addVersionFields(out map[string]any, r *record) {
	if r.Ver != 0 {
		out["stateMachineVersionArn"] = e.VersionArn(r.Ver)
	}
	if r.Alias != "" {
		out["stateMachineAliasArn"] = e.AliasArn(r.Alias)
	}
}
