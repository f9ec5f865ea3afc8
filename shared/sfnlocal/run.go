package sfnlocal

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/openprogram/lifecycle/shared/asl"
	"github.com/openprogram/lifecycle/shared/store"
)

const (
	// maxPayload is Step Functions' limit on state input/output and task
	// results (256 KiB); beyond it the execution fails with
	// States.DataLimitExceeded, here as there.
	maxPayload = 256 * 1024
	// maxImmediateTransitions bounds a run of Pass/Choice/Wait(0) states
	// without any Task or pending Wait between them: such a loop would spin
	// forever. Step Functions stops it at 25,000 history events.
	maxImmediateTransitions = 1000
	// storeBackoff is how long to wait before trying again after the store
	// refused a write.
	storeBackoff = time.Second
)

// commit makes w the execution's current record: durable first, then
// current in memory, then timers and status events follow. On error
// nothing changed in memory (a partial write is harmless: see doc.go).
//
// Writes: a new execution is one PutOnce of its item; a closing one is one
// CompareAndSwap of its item; every other boundary is one Append to its log.
func (e *Engine) commit(ctx context.Context, x *execution, w *record) error {
	var err error
	switch {
	case x.version == 0:
		err = e.writeCreated(ctx, w)
	case w.Status != statusRunning:
		err = e.writeClosed(ctx, x.version, w)
	default:
		err = e.appendLog(ctx, w, true)
	}
	if err != nil {
		return fmt.Errorf("write execution %s: %w", w.Name, err)
	}
	x.deferred = false
	wasRunning := x.rec == nil || x.rec.Status == statusRunning
	if x.version == 0 || w.Status != statusRunning {
		x.version++
	}
	x.rec = w
	if wasRunning && w.Status != statusRunning {
		x.pending = append(x.pending, e.statusEvent(w))
		e.mu.Lock()
		if e.execs[w.Name] == x {
			delete(e.execs, w.Name)
		}
		e.mu.Unlock()
	}
	e.arm(x)
	return nil
}

// itemBudget leaves room in store.MaxBodyBytes for keys and attributes.
const itemBudget = store.MaxBodyBytes - 4<<10

// writeCreated creates the execution item, with the events and position of
// the first boundary. (The events also go into the first log entry, so the
// item can later be rewritten at close without them.) When that does not
// fit in one item, the item is created bare and the rest logged.
func (e *Engine) writeCreated(ctx context.Context, w *record) error {
	it, err := w.item(1)
	if err != nil {
		return err
	}
	if len(it.Body) <= itemBudget {
		return e.store.PutOnce(ctx, it)
	}
	bare := *w
	bare.position = position{}
	bare.Events = nil
	if it, err = bare.item(1); err != nil {
		return err
	}
	if err := e.store.PutOnce(ctx, it); err != nil {
		return err
	}
	return e.appendLog(ctx, w, true)
}

// writeClosed rewrites the execution item with the outcome and the events
// not yet logged, and takes it out of the open index.
func (e *Engine) writeClosed(ctx context.Context, version int64, w *record) error {
	it, err := w.item(version + 1)
	if err != nil {
		return err
	}
	if len(it.Body) > itemBudget && len(w.Events) > 0 {
		if err := e.appendLog(ctx, w, false); err != nil {
			return err
		}
		if it, err = w.item(version + 1); err != nil {
			return err
		}
	}
	if len(it.Body) > itemBudget {
		// Input and output together exceed one item. Step Functions would
		// hold them; this engine keeps both in the execution item, so it
		// reports the limit instead of losing the output.
		w.Status, w.Output = statusFailed, nil
		w.Error = asl.ErrDataLimitExceeded
		w.Cause = fmt.Sprintf("the execution's input and output together exceed the %d bytes the embedded engine can store for one execution", itemBudget)
		if it, err = w.item(version + 1); err != nil {
			return err
		}
	}
	return e.store.CompareAndSwap(ctx, it, version, 0)
}

// appendLog writes the events not yet logged (and, with pos, the position)
// as log entries, in batches that each fit in one item; usually one entry.
// On success the events count as logged.
func (e *Engine) appendLog(ctx context.Context, w *record, pos bool) error {
	stream := histPrefix + w.Name
	from := w.firstEventID()
	events := w.Events
	for len(events) > 0 || pos {
		n, size := 0, 0
		for n < len(events) && (n == 0 || size+len(events[n]) <= itemBudget/2) {
			size += len(events[n])
			n++
		}
		entry := logEntry{}
		if n > 0 {
			entry.From, entry.To, entry.Events = from, from+int64(n)-1, events[:n]
		}
		if n == len(events) && pos {
			p := w.position
			entry.Pos = &p
		}
		body, err := entry.encode()
		if err != nil {
			return err
		}
		if len(body) > itemBudget && entry.Pos != nil && n > 0 {
			// The position does not fit beside the events: it goes next.
			entry.Pos = nil
			if body, err = entry.encode(); err != nil {
				return err
			}
		}
		if _, err := e.store.Append(ctx, stream, body); err != nil {
			return err
		}
		from += int64(n)
		events = events[n:]
		if entry.Pos != nil {
			pos = false
		}
	}
	w.Events, w.Logged = nil, w.NextEventID
	return nil
}

// unlock releases the execution and then delivers the status-change events
// its commits produced, so a callback can call back into the engine.
func (e *Engine) unlock(x *execution) {
	evs := x.pending
	x.pending = nil
	x.mu.Unlock()
	if e.onStatus == nil {
		return
	}
	for _, ev := range evs {
		e.onStatus(e.baseCtx, ev)
	}
}

// kick starts the invocation loop when the execution is at a Task to run.
func (e *Engine) kick(x *execution) {
	if x.invoking || x.rec.Status != statusRunning || x.rec.Phase != phaseRun || x.backoffUntil != 0 {
		return
	}
	if !e.track() {
		return
	}
	x.invoking = true
	go e.drive(x)
}

// drive invokes the functions of consecutive Task states of one execution,
// recording each result with one write, until the execution parks (Wait,
// retry delay, token wait) or closes.
func (e *Engine) drive(x *execution) {
	defer e.untrack()
	for {
		x.mu.Lock()
		if x.rec.Status != statusRunning || x.rec.Phase != phaseRun || x.backoffUntil != 0 || e.isClosing() {
			x.invoking = false
			e.unlock(x)
			return
		}
		st := x.sm.States[x.rec.State]
		now := e.clock.Now()
		if x.rec.Outcome != nil {
			// The outcome of this token arrived while the function ran, and
			// the process stopped before the function returned: the task is
			// complete; invoking again would be wrong.
			w := x.rec.clone()
			e.applyOutcome(x, w, st, *w.Outcome, now)
			e.commitOrBackoff(x, w, now)
			e.unlock(x)
			continue
		}
		payload, err := e.prepareInvocation(x, st, now)
		if err != nil {
			w := x.rec.clone()
			e.fail(w, err, now)
			e.commitOrBackoff(x, w, now)
			e.unlock(x)
			continue
		}
		gen := x.gen
		fn := e.functions[st.FunctionARN]
		var timeout time.Duration
		if st.ResourceKind != asl.ResourceLambdaInvokeWait && st.TimeoutSeconds > 0 {
			// A token task's TimeoutSeconds covers the whole wait and runs
			// on the execution's timer (TimeoutAt), not per call.
			timeout = time.Duration(st.TimeoutSeconds) * time.Second
		}
		x.mu.Unlock()

		var res invocation
		if fn == nil {
			// A definition published before the engine's functions changed
			// names one it no longer has: Lambda's answer for a function
			// that does not exist, which Retry and Catch can route.
			res = invocation{errName: "Lambda.ResourceNotFoundException", cause: fmt.Sprintf("Function not found: %s", st.FunctionARN)}
		} else {
			res = e.callFunction(fn, payload, timeout)
		}

		x.mu.Lock()
		if res.abandoned || x.gen != gen || x.rec.Status != statusRunning || x.rec.Phase != phaseRun {
			x.mu.Unlock()
			continue
		}
		now = e.clock.Now()
		w := x.rec.clone()
		e.completeInvocation(x, w, st, res, now)
		e.commitStep(x, w, now)
		e.unlock(x)
	}
}

// commitStep records a function's result. When the execution goes on to
// another Task to invoke right away (no token, no delay, still running),
// the boundary is not written: w becomes current in memory and its events
// ride on the next write (the next park, token wait or the close). A
// process that stops before that write resumes from the last boundary
// written and invokes the Tasks since then again, which the at-least-once
// contract of Tasks already allows (see doc.go); the history then holds
// only the second run of them. Boundaries that someone outside may rely
// on are always written: a token handed to a function, a Wait, a retry
// delay, the close, and every change made through the API.
func (e *Engine) commitStep(x *execution, w *record, now time.Time) {
	if x.version > 0 && x.backoffUntil == 0 && w.Status == statusRunning && w.Phase == phaseRun && w.Token == "" && w.Outcome == nil {
		x.rec, x.deferred = w, true
		e.arm(x)
		return
	}
	e.commitOrBackoff(x, w, now)
}

// commitOrBackoff commits w; if the store refuses, the execution stays
// where it was in memory too, and the step is tried again after a delay
// (for a Task: the function is invoked again, at least once semantics).
func (e *Engine) commitOrBackoff(x *execution, w *record, now time.Time) bool {
	err := e.commit(e.baseCtx, x, w)
	if errors.Is(err, store.ErrInvalid) {
		// The store refuses this data outright (too large for an item);
		// trying again cannot help. End the execution instead of looping.
		e.log.Error("sfnlocal: the store refused the execution's data; failing it", "execution", x.rec.Name, "err", err)
		f := x.rec.clone()
		f.Events = nil
		f.Logged = f.NextEventID
		e.failExecution(f, asl.ErrRuntime, "the embedded store refused the execution's data: "+err.Error(), now)
		err = e.commit(e.baseCtx, x, f)
	}
	if err != nil {
		e.log.Error("sfnlocal: cannot record execution progress; retrying", "execution", x.rec.Name, "state", x.rec.State, "err", err)
		x.backoffUntil = ms(now.Add(storeBackoff))
		e.arm(x)
		return false
	}
	return true
}

// prepareInvocation computes the payload of the current Task and records
// the scheduled/started events (in memory; they are written with the
// result).
func (e *Engine) prepareInvocation(x *execution, st *asl.State, now time.Time) ([]byte, error) {
	r := x.rec
	ctx := e.contextObject(x, r, st)
	var (
		payload any
		params  any
		err     error
	)
	switch st.ResourceKind {
	case asl.ResourceLambdaARN:
		payload, err = st.EffectiveInput(r.in, ctx)
	default:
		payload, err = st.InvokePayload(r.in, ctx)
		params = map[string]any{"FunctionName": st.FunctionARN, "Payload": payload}
	}
	if err != nil {
		return nil, err
	}
	b, rerr := encodeData(payload)
	if rerr != nil {
		return nil, rerr
	}
	switch st.ResourceKind {
	case asl.ResourceLambdaARN:
		r.addEvent(now, event{Type: "LambdaFunctionScheduled", LambdaScheduled: &lambdaScheduledDetails{
			Resource: st.FunctionARN, Input: string(b), InputDetails: notTruncated, TimeoutInSeconds: st.TimeoutSeconds}})
		r.addEvent(now, event{Type: "LambdaFunctionStarted"})
	default:
		pb, _ := asl.EncodeJSON(params)
		r.addEvent(now, event{Type: "TaskScheduled", TaskScheduled: &taskScheduledDetails{
			ResourceType: "lambda", Resource: resourceName(st), Region: e.region, Parameters: string(pb),
			TimeoutInSeconds: st.TimeoutSeconds, HeartbeatInSeconds: st.HeartbeatSeconds}})
		r.addEvent(now, event{Type: "TaskStarted", TaskStarted: &taskDetails{ResourceType: "lambda", Resource: resourceName(st)}})
	}
	return b, nil
}

func resourceName(st *asl.State) string {
	if st.ResourceKind == asl.ResourceLambdaInvokeWait {
		return "invoke.waitForTaskToken"
	}
	return "invoke"
}

// completeInvocation records a function's result and moves on.
func (e *Engine) completeInvocation(x *execution, w *record, st *asl.State, res invocation, now time.Time) {
	switch st.ResourceKind {
	case asl.ResourceLambdaARN:
		switch {
		case res.timedOut:
			w.addEvent(now, event{Type: "LambdaFunctionTimedOut", LambdaTimedOut: &errorDetails{Error: res.errName, Cause: res.cause}})
			e.taskFailed(x, w, st, res.errName, res.cause, now)
		case res.errName != "":
			w.addEvent(now, event{Type: "LambdaFunctionFailed", LambdaFailed: &errorDetails{Error: res.errName, Cause: res.cause}})
			e.taskFailed(x, w, st, res.errName, res.cause, now)
		default:
			result, out, err := decodeResult(res.output)
			if err != nil {
				e.fail(w, err, now)
				return
			}
			w.addEvent(now, event{Type: "LambdaFunctionSucceeded", LambdaSucceeded: &outputDetails{Output: string(out), OutputDetails: notTruncated}})
			e.taskSucceeded(x, w, st, result, now)
		}
	case asl.ResourceLambdaInvoke:
		td := taskDetails{ResourceType: "lambda", Resource: resourceName(st)}
		switch {
		case res.errName != "":
			td.Error, td.Cause = res.errName, res.cause
			typ := "TaskFailed"
			if res.timedOut {
				typ = "TaskTimedOut"
				w.addEvent(now, event{Type: typ, TaskTimedOut: &td})
			} else {
				w.addEvent(now, event{Type: typ, TaskFailed: &td})
			}
			e.taskFailed(x, w, st, res.errName, res.cause, now)
		default:
			payload, _, err := decodeResult(res.output)
			if err != nil {
				e.fail(w, err, now)
				return
			}
			result := map[string]any{"ExecutedVersion": "$LATEST", "Payload": payload, "StatusCode": json.Number("200")}
			out, rerr := encodeData(result)
			if rerr != nil {
				e.fail(w, rerr, now)
				return
			}
			td.Output, td.OutputDetails = strp(string(out)), notTruncated
			w.addEvent(now, event{Type: "TaskSucceeded", TaskSucceeded: &td})
			e.taskSucceeded(x, w, st, result, now)
		}
	case asl.ResourceLambdaInvokeWait:
		td := taskDetails{ResourceType: "lambda", Resource: resourceName(st)}
		switch {
		case w.Outcome != nil:
			// The token was used while the function was still running: that
			// outcome decides the task, whatever the function returned.
			e.applyOutcome(x, w, st, *w.Outcome, now)
		case res.errName != "":
			td.Error, td.Cause = res.errName, res.cause
			w.addEvent(now, event{Type: "TaskFailed", TaskFailed: &td})
			e.taskFailed(x, w, st, res.errName, res.cause, now)
		default:
			payload, _, err := decodeResult(res.output)
			if err != nil {
				e.fail(w, err, now)
				return
			}
			sub, _ := asl.EncodeJSON(map[string]any{"ExecutedVersion": "$LATEST", "Payload": payload, "StatusCode": json.Number("200")})
			td.Output, td.OutputDetails = strp(string(sub)), notTruncated
			w.addEvent(now, event{Type: "TaskSubmitted", TaskSubmitted: &td})
			w.Phase, w.Submitted = phaseToken, true
		}
	}
}

// applyOutcome completes a token task with the outcome given to
// SendTaskSuccess or SendTaskFailure.
func (e *Engine) applyOutcome(x *execution, w *record, st *asl.State, o outcome, now time.Time) {
	td := taskDetails{ResourceType: "lambda", Resource: resourceName(st)}
	w.Outcome = nil
	w.closeToken(false)
	if !o.Success {
		td.Error, td.Cause = o.Error, o.Cause
		w.addEvent(now, event{Type: "TaskFailed", TaskFailed: &td})
		e.taskFailed(x, w, st, o.Error, o.Cause, now)
		return
	}
	result, out, err := decodeResult(o.Output)
	if err != nil {
		e.fail(w, err, now)
		return
	}
	td.Output, td.OutputDetails = strp(string(out)), notTruncated
	w.addEvent(now, event{Type: "TaskSucceeded", TaskSucceeded: &td})
	e.taskSucceeded(x, w, st, result, now)
}

// taskSucceeded applies ResultSelector, ResultPath and OutputPath to the
// result and moves to the next state.
func (e *Engine) taskSucceeded(x *execution, w *record, st *asl.State, result any, now time.Time) {
	w.closeToken(false)
	out, err := st.ApplyResult(w.in, result, e.contextObject(x, w, st))
	if err != nil {
		e.fail(w, err, now)
		return
	}
	e.leave(x, w, st, out, st.Next, now)
}

// taskFailed handles a failed attempt: the first retrier whose ErrorEquals
// matches decides (retry after its delay if it has attempts left; if not,
// retrying stops); then the first matching catcher; otherwise the
// execution fails with the error.
func (e *Engine) taskFailed(x *execution, w *record, st *asl.State, name, cause string, now time.Time) {
	w.closeToken(name == asl.ErrTimeout || name == asl.ErrHeartbeatTimeout)
	if asl.Terminal(name) {
		e.failExecution(w, name, cause, now)
		return
	}
	for len(w.Retries) < len(st.Retry) {
		w.Retries = append(w.Retries, 0)
	}
	for i, rt := range st.Retry {
		if !rt.Matches(name) {
			continue
		}
		if w.Retries[i] < rt.MaxAttempts {
			delay := rt.Delay(w.Retries[i], e.random)
			w.Retries[i]++
			w.RetryCount++
			w.Phase, w.Due = phaseRetry, ms(now.Add(delay))
			return
		}
		break
	}
	for _, c := range st.Catch {
		if !c.Matches(name) {
			continue
		}
		out, err := c.Output(w.in, asl.ErrorOutput(name, cause))
		if err != nil {
			e.fail(w, err, now)
			return
		}
		e.leave(x, w, st, out, c.Next, now)
		return
	}
	e.failExecution(w, name, cause, now)
}

// leave records the exit of the current state with its output and enters
// next (or ends the execution when the state is an end state).
func (e *Engine) leave(x *execution, w *record, st *asl.State, out any, next string, now time.Time) {
	raw := e.exited(w, st, out, now)
	if raw == nil {
		return
	}
	if next == "" {
		e.succeed(w, raw, now)
		return
	}
	e.enterEncoded(x, w, next, out, raw, now)
}

// exited records the state's exit event and returns the output encoded
// (the next state's input, or the execution's output, as is); nil if the
// output is too large (the execution then failed).
func (e *Engine) exited(w *record, st *asl.State, out any, now time.Time) []byte {
	b, rerr := encodeData(out)
	if rerr != nil {
		e.fail(w, rerr, now)
		return nil
	}
	w.addEvent(now, event{Type: stateEventType(string(st.Type), true), StateExited: &stateDetails{Name: st.Name, Output: strp(string(b)), OutputDetails: notTruncated}})
	return b
}

// enter moves w into state name with raw input in, and runs every state
// that completes at once (Pass, Choice, Succeed, Fail, an elapsed Wait). It
// stops at a Task (phaseRun), at a Wait still to elapse (phaseWait), or
// when the execution closes.
func (e *Engine) enter(x *execution, w *record, name string, in any, now time.Time) {
	e.enterEncoded(x, w, name, in, nil, now)
}

// enterEncoded is enter with in already encoded as raw (nil: not yet).
func (e *Engine) enterEncoded(x *execution, w *record, name string, in any, raw []byte, now time.Time) {
	for steps := 0; ; steps++ {
		if steps == maxImmediateTransitions {
			e.failExecution(w, asl.ErrRuntime, fmt.Sprintf("more than %d consecutive transitions without a Task or Wait: the definition loops", maxImmediateTransitions), now)
			return
		}
		st, ok := x.sm.States[name]
		if !ok {
			e.failExecution(w, asl.ErrRuntime, fmt.Sprintf("no state named %q", name), now)
			return
		}
		if raw == nil {
			var rerr *asl.RuntimeError
			if raw, rerr = encodeData(in); rerr != nil {
				e.fail(w, rerr, now)
				return
			}
		}
		w.closeToken(false)
		w.State, w.StateInput, w.in, w.Entered, w.Phase, w.Due = name, raw, in, ms(now), "", 0
		w.Retries, w.RetryCount = nil, 0
		w.addEvent(now, event{Type: stateEventType(string(st.Type), false), StateEntered: &stateDetails{Name: name, Input: strp(string(raw)), InputDetails: notTruncated}})
		w.EnteredEvent = w.NextEventID
		ctx := e.contextObject(x, w, st)
		// Every state but Task and Fail ends here with an output and the
		// next state's name (none: the execution succeeds).
		var (
			next = st.Next
			out  any
			err  error
		)
		switch st.Type {
		case asl.TypeTask:
			e.startAttempt(w, st, now)
			return
		case asl.TypePass:
			out, err = st.PassResult(in, ctx)
		case asl.TypeChoice:
			next, out, err = st.Choose(in, ctx)
		case asl.TypeWait:
			var until time.Time
			until, out, err = st.WaitUntil(in, ctx, now)
			if err == nil && until.After(now) {
				w.Phase, w.Due = phaseWait, ms(until)
				if w.Due <= ms(now) {
					w.Due = ms(now) + 1
				}
				return
			}
		case asl.TypeSucceed:
			next = ""
			out, err = st.SucceedOutput(in, ctx)
		case asl.TypeFail:
			errName, cause, err := st.Failure(in, ctx)
			if err != nil {
				e.fail(w, err, now)
				return
			}
			e.failExecution(w, errName, cause, now)
			return
		}
		if err != nil {
			e.fail(w, err, now)
			return
		}
		if raw = e.exited(w, st, out, now); raw == nil {
			return
		}
		if next == "" {
			e.succeed(w, raw, now)
			return
		}
		name, in = next, out
	}
}

// finishWait ends an elapsed Wait state.
func (e *Engine) finishWait(x *execution, w *record, now time.Time) {
	st := x.sm.States[w.State]
	_, out, err := st.WaitUntil(w.in, e.contextObject(x, w, st), fromMS(w.Entered))
	if err != nil {
		e.fail(w, err, now)
		return
	}
	e.leave(x, w, st, out, st.Next, now)
}

// startAttempt readies the current Task for an invocation. A
// .waitForTaskToken attempt gets its token and deadlines now, so they are
// written before the function can see the token and survive a restart.
func (e *Engine) startAttempt(w *record, st *asl.State, now time.Time) {
	w.Phase, w.Due = phaseRun, 0
	if st.ResourceKind != asl.ResourceLambdaInvokeWait {
		return
	}
	w.Token = newToken(w.Name)
	w.Submitted, w.Outcome = false, nil
	if st.TimeoutSeconds > 0 {
		w.TimeoutAt = ms(now.Add(time.Duration(st.TimeoutSeconds) * time.Second))
	}
	if st.HeartbeatSeconds > 0 {
		w.HeartbeatAt = ms(now.Add(time.Duration(st.HeartbeatSeconds) * time.Second))
	}
}

// fail ends the execution because of a runtime error in the current state.
func (e *Engine) fail(w *record, err error, now time.Time) {
	var re *asl.RuntimeError
	if !errors.As(err, &re) {
		re = &asl.RuntimeError{Name: asl.ErrRuntime, Cause: err.Error()}
	}
	cause := re.Cause
	if re.Name == asl.ErrRuntime && w.State != "" {
		cause = fmt.Sprintf("An error occurred while executing the state '%s' (entered at the event id #%d). %s", w.State, w.EnteredEvent, re.Cause)
	}
	e.failExecution(w, re.Name, cause, now)
}

func (e *Engine) failExecution(w *record, name, cause string, now time.Time) {
	w.addEvent(now, event{Type: "ExecutionFailed", ExecutionFailed: &errorDetails{Error: name, Cause: cause}})
	e.closeRecord(w, statusFailed, now)
	w.Error, w.Cause = name, cause
}

// succeed closes the execution with its output, already encoded.
func (e *Engine) succeed(w *record, b []byte, now time.Time) {
	w.addEvent(now, event{Type: "ExecutionSucceeded", ExecutionSucceeded: &outputDetails{Output: string(b), OutputDetails: notTruncated}})
	e.closeRecord(w, statusSucceeded, now)
	w.Output = b
}

func (e *Engine) closeRecord(w *record, status string, now time.Time) {
	w.closeToken(status == statusTimedOut)
	w.clearPosition()
	w.Status, w.Stop = status, ms(now)
}

// abort stops the execution (StopExecution).
func (e *Engine) abort(x *execution, w *record, errName, cause string, now time.Time) {
	x.gen++
	w.addEvent(now, event{Type: "ExecutionAborted", ExecutionAborted: &errorDetails{Error: errName, Cause: cause}})
	e.closeRecord(w, statusAborted, now)
	w.Error, w.Cause = errName, cause
}

// arm sets the execution's single timer to its earliest due time: the
// execution deadline, the end of a Wait or retry delay, a token task's
// timeout or heartbeat deadline, or the retry after a refused write.
func (e *Engine) arm(x *execution) {
	if x.stopTimer != nil {
		x.stopTimer()
		x.stopTimer = nil
	}
	x.timerSeq++
	r := x.rec
	if r.Status != statusRunning {
		return
	}
	var due int64
	consider := func(t int64) {
		if t > 0 && (due == 0 || t < due) {
			due = t
		}
	}
	consider(r.Deadline)
	if r.Phase == phaseWait || r.Phase == phaseRetry {
		consider(r.Due)
	}
	if r.Token != "" {
		consider(r.TimeoutAt)
		consider(r.HeartbeatAt)
	}
	consider(x.backoffUntil)
	if due == 0 {
		return
	}
	seq := x.timerSeq
	x.stopTimer = e.clock.AfterFunc(fromMS(due).Sub(e.clock.Now()), func() { e.onTimer(x, seq) })
}

// onTimer handles whatever became due.
func (e *Engine) onTimer(x *execution, seq uint64) {
	if !e.track() {
		return
	}
	defer e.untrack()
	x.mu.Lock()
	if seq != x.timerSeq || x.rec.Status != statusRunning {
		x.mu.Unlock()
		return
	}
	now := e.clock.Now()
	nowMS := ms(now)
	if x.backoffUntil != 0 && nowMS >= x.backoffUntil {
		x.backoffUntil = 0
	}
	r := x.rec
	st := x.sm.States[r.State]
	var w *record
	switch {
	case r.Deadline > 0 && nowMS >= r.Deadline:
		w = r.clone()
		x.gen++
		cause := fmt.Sprintf("The execution exceeded its TimeoutSeconds of %d", x.sm.TimeoutSeconds)
		w.addEvent(now, event{Type: "ExecutionTimedOut", ExecutionTimedOut: &errorDetails{Error: asl.ErrTimeout, Cause: cause}})
		e.closeRecord(w, statusTimedOut, now)
		w.Error, w.Cause = asl.ErrTimeout, cause
	case r.Phase == phaseWait && nowMS >= r.Due:
		w = r.clone()
		e.finishWait(x, w, now)
	case r.Phase == phaseRetry && nowMS >= r.Due:
		w = r.clone()
		e.startAttempt(w, st, now)
		if st.ResourceKind != asl.ResourceLambdaInvokeWait {
			// Nothing new to make durable: after a restart the attempt
			// would start the same way.
			x.rec = w
			w = nil
		}
	case r.Token != "" && r.TimeoutAt > 0 && nowMS >= r.TimeoutAt:
		w = r.clone()
		x.gen++
		e.tokenTimedOut(x, w, st, asl.ErrTimeout, fmt.Sprintf("The task did not complete within its TimeoutSeconds of %d", st.TimeoutSeconds), now)
	case r.Token != "" && r.HeartbeatAt > 0 && nowMS >= r.HeartbeatAt:
		w = r.clone()
		x.gen++
		e.tokenTimedOut(x, w, st, asl.ErrHeartbeatTimeout, fmt.Sprintf("The task sent no heartbeat within its HeartbeatSeconds of %d", st.HeartbeatSeconds), now)
	}
	if w != nil {
		e.commitOrBackoff(x, w, now)
	} else {
		e.arm(x)
	}
	e.kick(x)
	e.unlock(x)
}

func (e *Engine) tokenTimedOut(x *execution, w *record, st *asl.State, name, cause string, now time.Time) {
	w.addEvent(now, event{Type: "TaskTimedOut", TaskTimedOut: &taskDetails{ResourceType: "lambda", Resource: resourceName(st), Error: name, Cause: cause}})
	e.taskFailed(x, w, st, name, cause, now)
}

// contextObject returns the $$ of the current state, built only if a path
// reads it.
func (e *Engine) contextObject(x *execution, w *record, st *asl.State) asl.ContextFunc {
	return func() any {
		c := map[string]any{
			"Execution": map[string]any{
				"Id":           e.ExecutionArn(w.Name),
				"Input":        x.input,
				"Name":         w.Name,
				"RoleArn":      e.roleArn(),
				"StartTime":    isoTime(fromMS(w.Start)),
				"RedriveCount": json.Number("0"),
			},
			"State": map[string]any{
				"EnteredTime": isoTime(fromMS(w.Entered)),
				"Name":        st.Name,
				"RetryCount":  json.Number(fmt.Sprint(w.RetryCount)),
			},
			"StateMachine": map[string]any{"Id": e.smArn, "Name": e.smName},
		}
		if w.Token != "" && st.ResourceKind == asl.ResourceLambdaInvokeWait {
			c["Task"] = map[string]any{"Token": w.Token}
		}
		return c
	}
}

func (e *Engine) roleArn() string {
	return fmt.Sprintf("arn:aws:iam::%s:role/%s-role", e.account, e.smName)
}

func isoTime(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }

// encodeData encodes state data, enforcing the payload limit.
func encodeData(v any) (json.RawMessage, *asl.RuntimeError) {
	b, err := asl.EncodeJSON(v)
	if err != nil {
		return nil, &asl.RuntimeError{Name: asl.ErrRuntime, Cause: err.Error()}
	}
	if len(b) > maxPayload {
		return nil, &asl.RuntimeError{Name: asl.ErrDataLimitExceeded, Cause: fmt.Sprintf("The state/task returned a result with a size exceeding the maximum number of bytes service limit (%d > %d)", len(b), maxPayload)}
	}
	return b, nil
}

// decodeResult decodes a function response (empty: null) and re-encodes it
// compactly for history.
func decodeResult(b []byte) (any, json.RawMessage, error) {
	if len(b) == 0 {
		return nil, json.RawMessage("null"), nil
	}
	if len(b) > maxPayload {
		return nil, nil, &asl.RuntimeError{Name: asl.ErrDataLimitExceeded, Cause: fmt.Sprintf("The task returned a result with a size exceeding the maximum number of bytes service limit (%d > %d)", len(b), maxPayload)}
	}
	v, err := asl.DecodeJSON(b)
	if err != nil {
		return nil, nil, &asl.RuntimeError{Name: asl.ErrRuntime, Cause: "the function returned a response that is not JSON: " + err.Error()}
	}
	out, rerr := encodeData(v)
	if rerr != nil {
		return nil, nil, rerr
	}
	return v, out, nil
}
