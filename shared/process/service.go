package process

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/openprogram/lifecycle/shared/actionflow"
	"github.com/openprogram/lifecycle/shared/ids"
	"github.com/openprogram/lifecycle/shared/store"
)

// Service keeps managed process records.
type Service struct {
	Store store.Store
	// Flow, if set, writes each start, stop request and end with its event
	// in the session's log (in one transaction) and answers whether an
	// execution exists.
	Flow  *actionflow.Service
	Clock func() time.Time
}

// ForFlow is the process service of a lifecycle service.
func ForFlow(flow *actionflow.Service) *Service {
	return &Service{Store: flow.Store(), Flow: flow, Clock: flow.Now}
}

var _ actionflow.RunCloser = (*Service)(nil)

func (s *Service) now() time.Time {
	if s.Clock != nil {
		return s.Clock().UTC()
	}
	return time.Now().UTC()
}

// NewID is a fresh process id.
func NewID() string { return ids.New("proc") }

// SupervisorError: a report came from a supervisor that does not run the
// process (another instance, or one that lost it).
type SupervisorError struct {
	ProcessID string
	Want, Got string
}

func (e *SupervisorError) Error() string {
	return fmt.Sprintf("process %s is supervised by %s, not %s", e.ProcessID, e.Want, e.Got)
}

// EndedError: the process already ended (Record says how); a supervisor
// that still holds it should stop it (nobody watches it any more).
type EndedError struct{ Record Record }

func (e *EndedError) Error() string {
	return fmt.Sprintf("process %s already ended (%s)", e.Record.ProcessID, e.Record.Status)
}

// write applies ws with an event when typ is set and the service has a flow.
func (s *Service) write(ctx context.Context, ws []store.Write, r Record, typ string) error {
	if s.Flow != nil && typ != "" {
		_, err := s.Flow.TransactWithEvent(ctx, ws,
			actionflow.Event{Type: typ, SessionID: r.SessionID, ExecutionID: r.ExecutionID, ActionID: r.ActionID}, r)
		return err
	}
	_, err := s.Store.Transact(ctx, ws)
	return err
}

// Start records a process its supervisor just started: the record, the
// execution's link to it and its process.started event, in one
// transaction. A repeat of the same id is an error wrapping
// *store.ConflictError.
func (s *Service) Start(ctx context.Context, r Record) (Record, error) {
	switch {
	case r.ProcessID == "" || !strings.HasPrefix(r.ProcessID, "proc_"):
		return r, &actionflow.ValidationError{Field: "process_id", Msg: "must be a proc_ id"}
	case r.SessionID == "":
		return r, &actionflow.ValidationError{Field: "session_id", Msg: "required"}
	case r.ExecutionID == "":
		return r, &actionflow.ValidationError{Field: "execution_id", Msg: "required"}
	case r.ActionID == "":
		return r, &actionflow.ValidationError{Field: "action_id", Msg: "required"}
	case r.Supervisor.ID == "" || r.Supervisor.Host == "":
		return r, &actionflow.ValidationError{Field: "supervisor", Msg: "id and host are required"}
	case strings.TrimSpace(r.Command) == "":
		return r, &actionflow.ValidationError{Field: "command", Msg: "required"}
	}
	now := s.now()
	r.Status, r.StartedAt, r.HeartbeatAt, r.Version = Running, now, now, 1
	r.ExitCode, r.EndedAt, r.Stop, r.LostReason = nil, nil, nil, ""
	r.Streams = map[string]StreamState{}
	link := linkKey(r.ExecutionID, r.ProcessID)
	ws := []store.Write{
		store.PutOnceWrite(item(r)),
		store.PutOnceWrite(store.Item{PK: link.PK, SK: link.SK, Version: 1, Body: []byte(`{"process_id":"` + r.ProcessID + `"}`)}),
	}
	if err := s.write(ctx, ws, r, "process.started"); err != nil {
		return r, fmt.Errorf("record process %s: %w", r.ProcessID, err)
	}
	return r, nil
}

// Get reads a process (*actionflow.NotFoundError when there is none).
func (s *Service) Get(ctx context.Context, id string) (Record, error) {
	it, err := s.Store.Get(ctx, metaKey(id))
	if errors.Is(err, store.ErrNotFound) {
		return Record{}, &actionflow.NotFoundError{What: "process " + id}
	}
	if err != nil {
		return Record{}, fmt.Errorf("read process %s: %w", id, err)
	}
	return decodeRecord(it)
}

// ListExecution lists the processes an execution started, oldest first.
func (s *Service) ListExecution(ctx context.Context, exec ids.ExecutionID) ([]Record, error) {
	var out []Record
	err := store.Each(ctx, s.Store, store.ExecPK(string(exec)), store.QueryOptions{SKPrefix: linkSK}, func(it store.Item) error {
		r, err := s.Get(ctx, strings.TrimPrefix(it.SK, linkSK))
		out = append(out, r)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("list processes of %s: %w", exec, err)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].StartedAt.Before(out[j].StartedAt) })
	return out, nil
}

// ListSession lists a session's processes, oldest first.
func (s *Service) ListSession(ctx context.Context, session ids.SessionID) ([]Record, error) {
	return s.listIndex(ctx, store.IndexSession, store.SessionPK(string(session)), pkPrefix)
}

// listRunning lists every running process (the sparse open index).
func (s *Service) listRunning(ctx context.Context) ([]Record, error) {
	return s.listIndex(ctx, store.IndexOpen, openIndex, "")
}

func (s *Service) listIndex(ctx context.Context, index store.Index, pk, prefix string) ([]Record, error) {
	var out []Record
	err := store.EachInIndex(ctx, s.Store, index, pk, store.QueryOptions{SKPrefix: prefix}, func(it store.Item) error {
		if !strings.HasPrefix(it.PK, pkPrefix) || it.SK != "META" {
			return nil
		}
		r, err := decodeRecord(it)
		out = append(out, r)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("list processes: %w", err)
	}
	return out, nil
}

// Exit is how a process ended, as its supervisor saw it.
type Exit struct {
	// Code is the exit status (-1: ended by a signal).
	Code int `json:"code"`
}

// Report is a supervisor's report on one process: output written since
// its last report (per stream, at most MaxReportBytes each) and, once, its
// end. An empty report is a heartbeat.
type Report struct {
	Supervisor Supervisor        `json:"supervisor"`
	Output     map[string][]byte `json:"output,omitempty"`
	Exit       *Exit             `json:"exit,omitempty"`
	// StopBy, with Exit, says the supervisor itself stopped the process
	// (e.g. "worker_shutdown"): it ends stopped, not exited.
	StopBy string `json:"stop_by,omitempty"`
	// By is the identity the report came under (the API sets it from the
	// verified token; empty in process): it must be the record's
	// RegisteredBy.
	By string `json:"-"`
}

// Report stores a supervisor's report and returns the record (its Stop
// tells the supervisor to stop the process). Output is appended to its
// streams' chunks (the oldest slot overwritten once a stream has
// RetainChunks), the heartbeat moves, and an Exit ends the record: stopped
// if a stop was requested, else exited. A report from another supervisor
// is *SupervisorError; one under another identity than the record's
// RegisteredBy is *actionflow.ForbiddenError (checked first: the
// supervisor id is readable by anyone who may read the record); a report
// on an ended record is *EndedError (its output is not stored: the
// record's end is final).
func (s *Service) Report(ctx context.Context, id string, rep Report) (Record, error) {
	for st, data := range rep.Output {
		if !ValidStream(st) {
			return Record{}, &actionflow.ValidationError{Field: "output", Msg: fmt.Sprintf("unknown stream %q (stdout or stderr)", st)}
		}
		if len(data) > MaxReportBytes {
			return Record{}, &actionflow.ValidationError{Field: "output." + st, Msg: fmt.Sprintf("%d bytes, more than %d in one report", len(data), MaxReportBytes)}
		}
	}
	for i := 0; i < 8; i++ {
		r, err := s.Get(ctx, id)
		if err != nil {
			return r, err
		}
		if r.RegisteredBy != rep.By {
			return Record{}, &actionflow.ForbiddenError{Msg: fmt.Sprintf(
				"process %s was recorded under another identity; only the supervisor that recorded it, with its own token, reports on it", id)}
		}
		if r.Supervisor.ID != rep.Supervisor.ID {
			return r, &SupervisorError{ProcessID: id, Want: r.Supervisor.ID, Got: rep.Supervisor.ID}
		}
		if r.Status.Terminal() {
			return r, &EndedError{Record: r}
		}
		ws, err := s.appendOutput(ctx, &r, rep.Output)
		if err != nil {
			return r, err
		}
		now := s.now()
		r.HeartbeatAt = now
		typ := ""
		if rep.Exit != nil {
			code := rep.Exit.Code
			r.ExitCode, r.EndedAt, r.Status = &code, &now, Exited
			if r.Stop == nil && rep.StopBy != "" {
				r.Stop = &StopRequest{CommandID: ids.CommandID("supervisor_" + rep.Supervisor.ID), By: rep.StopBy, At: now}
			}
			if r.Stop != nil {
				r.Status = Stopped
			}
			typ = "process.ended"
		}
		expected := r.Version
		r.Version++
		ws = append([]store.Write{store.CASOf(item(r), expected, 0)}, ws...)
		err = s.write(ctx, ws, r, typ)
		if errors.Is(err, store.ErrConflict) {
			continue // a stop request or a sweep moved it: read again
		}
		if err != nil {
			return r, fmt.Errorf("report on process %s: %w", id, err)
		}
		return r, nil
	}
	return Record{}, fmt.Errorf("report on process %s: too many concurrent changes", id)
}

// appendOutput plans the chunk writes of output and advances r's streams.
func (s *Service) appendOutput(ctx context.Context, r *Record, output map[string][]byte) ([]store.Write, error) {
	var ws []store.Write
	for _, st := range []string{Stdout, Stderr} {
		data := output[st]
		if len(data) == 0 {
			continue
		}
		ss := r.Streams[st]
		// The stream's last chunk fills up first.
		var cur chunk
		var curVersion int64
		if ss.Chunks > 0 {
			it, err := s.Store.Get(ctx, chunkKey(r.ProcessID, st, (ss.Chunks-1)%RetainChunks))
			if err != nil {
				return nil, fmt.Errorf("read the last %s chunk of %s: %w", st, r.ProcessID, err)
			}
			if err := jsonUnmarshal(it.Body, &cur); err != nil {
				return nil, fmt.Errorf("decode a chunk of %s: %w", r.ProcessID, err)
			}
			curVersion = it.Version
		}
		for len(data) > 0 {
			if ss.Chunks == 0 || len(cur.Data) >= ChunkBytes {
				ss.Chunks++
				cur = chunk{Stream: st, N: ss.Chunks, Offset: ss.Bytes}
				it, err := s.Store.Get(ctx, chunkKey(r.ProcessID, st, (ss.Chunks-1)%RetainChunks))
				switch {
				case errors.Is(err, store.ErrNotFound):
					curVersion = 0
				case err != nil:
					return nil, fmt.Errorf("read a %s slot of %s: %w", st, r.ProcessID, err)
				default:
					curVersion = it.Version
				}
			}
			n := min(ChunkBytes-len(cur.Data), len(data))
			cur.Data = append(cur.Data, data[:n]...)
			data = data[n:]
			ss.Bytes += int64(n)
			if len(data) == 0 || len(cur.Data) >= ChunkBytes {
				ws = append(ws, store.CASOf(chunkItem(r.ProcessID, cur, curVersion+1), curVersion, 0))
			}
		}
		r.Streams[st] = ss
	}
	return ws, nil
}

// StopResult is what a stop request did.
type StopResult struct {
	Record Record `json:"process"`
	// Status: "accepted" (saved; the supervisor stops it at its next
	// poll), "applied" (the process has ended), or "rejected" (it was
	// lost: nothing can stop it from here).
	Status string `json:"status"`
}

// RequestStop saves a stop request on a running process. Idempotent: a
// process that already has a stop request keeps the first (a repeat with
// any command id answers with the stored one); an ended process answers
// applied (or rejected when it is lost) and writes nothing.
func (s *Service) RequestStop(ctx context.Context, id string, req StopRequest) (StopResult, error) {
	if req.CommandID == "" {
		return StopResult{}, &actionflow.ValidationError{Field: "command_id", Msg: "required"}
	}
	for i := 0; i < 8; i++ {
		r, err := s.Get(ctx, id)
		if err != nil {
			return StopResult{}, err
		}
		switch {
		case r.Status == Lost && r.Stop != nil:
			return StopResult{Record: r, Status: "rejected"}, nil
		case r.Status == Lost:
			// Nothing can stop it from here (its supervisor is gone and its
			// saved PID is no handle); the request is saved as the
			// acknowledgement that takes it out of Needs attention.
			req.At = s.now()
			r.Stop = &req
			expected := r.Version
			r.Version++
			err = s.write(ctx, []store.Write{store.CASOf(item(r), expected, 0)}, r, "process.stop_requested")
			if errors.Is(err, store.ErrConflict) {
				continue
			}
			if err != nil {
				return StopResult{}, fmt.Errorf("acknowledge lost process %s: %w", id, err)
			}
			return StopResult{Record: r, Status: "rejected"}, nil
		case r.Status.Terminal():
			return StopResult{Record: r, Status: "applied"}, nil
		case r.Stop != nil:
			return StopResult{Record: r, Status: "accepted"}, nil
		}
		req.At = s.now()
		r.Stop = &req
		expected := r.Version
		r.Version++
		err = s.write(ctx, []store.Write{store.CASOf(item(r), expected, 0)}, r, "process.stop_requested")
		if errors.Is(err, store.ErrConflict) {
			continue
		}
		if err != nil {
			return StopResult{}, fmt.Errorf("request stop of process %s: %w", id, err)
		}
		return StopResult{Record: r, Status: "accepted"}, nil
	}
	return StopResult{}, fmt.Errorf("request stop of process %s: too many concurrent changes", id)
}

// CloseExecution is the RunCloser of processes: a cancelled execution
// (reason "execution_cancelled") has a stop requested on every process it
// owns that still runs. Any other end (the agent's End, the iteration
// limit) leaves them running: an agent finishing its reply does not mean
// its background process has stopped. Idempotent.
func (s *Service) CloseExecution(ctx context.Context, exec ids.ExecutionID, reason string) error {
	if reason != "execution_cancelled" {
		return nil
	}
	rs, err := s.ListExecution(ctx, exec)
	if err != nil {
		return err
	}
	for _, r := range rs {
		if r.Status != Running {
			continue
		}
		if _, err := s.RequestStop(ctx, r.ProcessID, StopRequest{CommandID: ids.CommandID("cancel_" + string(exec)), By: reason}); err != nil {
			return err
		}
	}
	return nil
}

// markLost ends a running record as lost (with its process.ended event);
// it reports whether it did.
func (s *Service) markLost(ctx context.Context, id, why string, still func(Record) bool) (bool, error) {
	for i := 0; i < 8; i++ {
		r, err := s.Get(ctx, id)
		if err != nil {
			return false, err
		}
		if r.Status != Running || !still(r) {
			return false, nil
		}
		now := s.now()
		r.Status, r.EndedAt, r.LostReason = Lost, &now, why
		expected := r.Version
		r.Version++
		err = s.write(ctx, []store.Write{store.CASOf(item(r), expected, 0)}, r, "process.ended")
		if errors.Is(err, store.ErrConflict) {
			continue
		}
		if err != nil {
			return false, fmt.Errorf("mark process %s lost: %w", id, err)
		}
		return true, nil
	}
	return false, fmt.Errorf("mark process %s lost: too many concurrent changes", id)
}

// Recover is a supervisor's report at its start-up: sup is the new
// instance. Every running record of the same Host that another instance
// started is lost: its supervisor is gone, and nobody may signal it by its
// saved PID. The instance's own records are left alone unless running is
// a list (not nil) that leaves them out: a report that arrives late (it is
// retried until the API answers) must not lose what the instance started
// meanwhile. It returns the records it marked lost.
//
// session, if set, limits it to that session's records (a remote
// supervisor with a session's token speaks only for that session); and
// only records registered under by (RegisteredBy: the token's subject
// over the API, "" in process) are considered, so another identity
// naming the same Host cannot make them lost.
func (s *Service) Recover(ctx context.Context, sup Supervisor, running []string, session ids.SessionID, by string) ([]string, error) {
	if sup.ID == "" || sup.Host == "" {
		return nil, &actionflow.ValidationError{Field: "supervisor", Msg: "id and host are required"}
	}
	runs := map[string]bool{}
	for _, id := range running {
		runs[id] = true
	}
	rs, err := s.listRunning(ctx)
	if err != nil {
		return nil, err
	}
	var lost []string
	for _, r := range rs {
		if r.Supervisor.Host != sup.Host || (r.Supervisor.ID == sup.ID && (running == nil || runs[r.ProcessID])) || (session != "" && r.SessionID != session) ||
			r.RegisteredBy != by {
			continue
		}
		why := "its supervisor (" + r.Supervisor.ID + " on " + r.Supervisor.Host + ") is gone: the worker restarted"
		if r.Supervisor.ID == sup.ID {
			why = "its supervisor does not run it any more"
		}
		ok, err := s.markLost(ctx, r.ProcessID, why, func(cur Record) bool { return cur.Supervisor.ID == r.Supervisor.ID })
		if err != nil {
			return lost, err
		}
		if ok {
			lost = append(lost, r.ProcessID)
		}
	}
	return lost, nil
}

// Sweep marks lost every running process whose supervisor has not
// reported since before cutoff (now - LostAfter): a worker that died
// without a successor of the same Host to say so. It returns how many.
func (s *Service) Sweep(ctx context.Context, cutoff time.Time) (int, error) {
	rs, err := s.listRunning(ctx)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, r := range rs {
		if !r.HeartbeatAt.Before(cutoff) {
			continue
		}
		ok, err := s.markLost(ctx, r.ProcessID, "its supervisor stopped reporting (no heartbeat since "+r.HeartbeatAt.Format(time.RFC3339)+")",
			func(cur Record) bool { return cur.HeartbeatAt.Before(cutoff) })
		if err != nil {
			return n, err
		}
		if ok {
			n++
		}
	}
	return n, nil
}
