package flowtest

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/openprogram/lifecycle/shared/actionflow"
	"github.com/openprogram/lifecycle/shared/faults"
	"github.com/openprogram/lifecycle/shared/ids"
	"github.com/openprogram/lifecycle/shared/store"
	"github.com/openprogram/lifecycle/shared/store/sqlitestore"
)

// Clock is a manual clock shared by every process of a test.
type Clock struct {
	mu sync.Mutex
	t  time.Time
}

// NewClock starts at a fixed instant.
func NewClock() *Clock { return &Clock{t: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)} }

func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(time.Millisecond) // strictly increasing, like real time
	return c.t
}

// Advance moves the clock forward.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// Tools of the kit's policy.
const (
	ToolWrite     = "write"     // allow, sync executor
	ToolAsk       = "ask_write" // ask, then sync executor
	ToolForbidden = "forbidden" // deny rule
	ToolBlocked   = "blocked"   // classifier block (counted)
	ToolHost      = "host_run"  // allow, host worker
	ToolAskHost   = "ask_host"  // ask, then host worker
)

// World is what survives a process crash: the store file, the clock and
// the external systems' own logs.
type World struct {
	Path  string
	Clock *Clock
	// Sync is the sync executor's log; Host is the host tools' log.
	Sync *Executor
	Host *Executor
	// Bus receives the published events (every process publishes to it).
	Bus  *Bus
	Mode CrashMode
	// Log receives the services' logs (default: discarded).
	Log *slog.Logger
	// Wrap, if set, wraps the store every process uses (failure injection).
	Wrap func(store.Store) store.Store
	// Revisions, if set, is the deployment's revisions every process
	// starts machines through (revisions.go of package actionflow), with
	// RevisionPolicy the processes' default policy.
	Revisions      *Revisions
	RevisionPolicy string
}

// NewWorld makes a world in a test's temporary directory.
func NewWorld(t testing.TB) *World {
	return &World{Path: filepath.Join(t.TempDir(), "state.db"), Clock: NewClock(), Sync: &Executor{}, Host: &Executor{}, Bus: &Bus{},
		Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
}

// Process is one activation of the stack over the world's store.
type Process struct {
	World *World
	// Store is what the services use (World.Wrap applied); DB is the file.
	Store  store.Store
	DB     *sqlitestore.Store
	Flow   *actionflow.Service
	Engine *Engine
}

// Start opens the store and builds the lifecycle and the engine.
func (w *World) Start(t testing.TB) *Process {
	t.Helper()
	db, err := sqlitestore.Open(w.Path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	var st store.Store = db
	if w.Wrap != nil {
		st = w.Wrap(db)
	}
	eng := &Engine{Store: st, Mode: w.Mode}
	cfg := actionflow.Config{
		Store: st,
		Decider: Decider{Store: st, ByTool: map[string]Policy{
			ToolWrite: Allow, ToolAsk: Ask, ToolForbidden: Deny, ToolBlocked: Block, ToolHost: Allow, ToolAskHost: Ask}},
		Router:    Routes{ToolWrite: "sync", ToolAsk: "sync", ToolForbidden: "sync", ToolBlocked: "sync", ToolHost: actionflow.ExecutorHost, ToolAskHost: actionflow.ExecutorHost},
		Executors: map[string]actionflow.Executor{"sync": w.Sync},
		Starter:   eng, Tasks: eng,
		Clock:          w.Clock.Now,
		Logger:         w.Log,
		RevisionPolicy: w.RevisionPolicy,
	}
	if w.Bus != nil {
		cfg.Publisher = w.Bus
	}
	if w.Revisions != nil {
		w.Revisions.mu.Lock()
		w.Revisions.starter = eng
		w.Revisions.mu.Unlock()
		cfg.Revisions = w.Revisions
	}
	flow, err := actionflow.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	eng.Flow = flow
	return &Process{World: w, Store: st, DB: db, Flow: flow, Engine: eng}
}

// Crash ends the process without any cleanup (its store handle closes, as
// the OS would close it).
func (p *Process) Crash() { p.DB.Close() }

// Submit submits one tool call.
func (p *Process) Submit(ctx context.Context, session ids.SessionID, exec ids.ExecutionID, tool, args string) (actionflow.Action, error) {
	a, _, err := p.Flow.Submit(ctx, actionflow.SubmitRequest{SessionID: session, ExecutionID: exec, ToolCallID: ids.ToolCallID(ids.New("call")),
		Tool: tool, Arguments: []byte(args), Interactive: true, Principal: actionflow.Principal{Subject: "agent", Role: "agent", Session: session}})
	return a, err
}

// Human is the owner of a session.
func Human(session ids.SessionID) actionflow.Principal {
	return actionflow.Principal{Subject: "alice", Role: "human", Session: session, Origin: "ui"}
}

// DecidePending answers every pending approval of a session.
func (p *Process) DecidePending(ctx context.Context, session ids.SessionID, decision string) (int, error) {
	aps, err := p.Flow.PendingApprovals(ctx, session)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, ap := range aps {
		if _, err := p.Flow.DecideApproval(ctx, ap.ApprovalID, decision, ap.ArgsDigest, Human(session)); err != nil {
			if errors.As(err, new(*actionflow.ConflictError)) {
				continue // decided meanwhile, or its wait ended
			}
			return n, err
		}
		n++
	}
	return n, nil
}

// RunHostTasks is a host worker pass: claim every published task, run it
// (in World.Host, the host's own log) and post the result.
func (p *Process) RunHostTasks(ctx context.Context) (int, error) {
	tasks, err := p.Flow.HostTasks(ctx, "", 1000)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, a := range tasks {
		attempt := ids.NewAttemptID()
		task, err := p.Flow.HostStart(ctx, a.ActionID, attempt)
		if err != nil {
			if errors.As(err, new(*faults.CrashError)) {
				return n, err
			}
			continue // claimed by another worker, closed, or no longer waiting
		}
		res := p.World.Host.Run(task.ActionID)
		if err := p.Flow.HostResult(ctx, a.ActionID, attempt, task.Fence, res); err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}
