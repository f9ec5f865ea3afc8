package hostworker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"syscall"
	"time"

	"github.com/openprogram/lifecycle/shared/actionflow"
	"github.com/openprogram/lifecycle/shared/hosttools"
	"github.com/openprogram/lifecycle/shared/ids"
	"github.com/openprogram/lifecycle/shared/lifecycle"
	"github.com/openprogram/lifecycle/shared/process"
)

// ProcessHost is the lifecycle as a supervisor of managed processes sees
// it. A Host that implements it runs Bash calls with run_in_background;
// one that does not refuses them (nothing starts).
type ProcessHost interface {
	// ProcessStart records a process the supervisor just started.
	ProcessStart(ctx context.Context, r process.Record) (process.Record, error)
	// ProcessReport posts output, a heartbeat and, once, the end; the
	// record it returns carries a stop request.
	ProcessReport(ctx context.Context, id string, rep process.Report) (process.Record, error)
	// ProcessRecover reports, at start-up, what this supervisor runs:
	// the earlier instances' processes become lost.
	ProcessRecover(ctx context.Context, sup process.Supervisor, running []string) ([]string, error)
}

// Supervisor runs the managed processes a worker started: it drains their
// output into reports every process.PollEvery, carries out stop requests
// on the process groups it holds (SIGTERM, SIGKILL after
// process.StopGrace) and reports each end once. It never signals a
// process it did not start in this instance: a PID saved in a record is
// not a handle.
type Supervisor struct {
	Host ProcessHost
	Self process.Supervisor
	Log  *slog.Logger

	mu        sync.Mutex
	procs     map[string]*managed
	wg        sync.WaitGroup
	abandoned chan struct{}
	abandon   sync.Once
}

// Abandon is a hard stop (as if the worker were killed): every process is
// killed and nothing more is reported, so their records stay running
// until the next instance's Recover (or a Sweep) says they are lost.
func (s *Supervisor) Abandon() { s.abandon.Do(func() { close(s.abandoned) }) }

// NewSupervisor is a new supervisor instance for host (a stable name of
// the worker across restarts: "embedded" for the worker of `lifecycle
// serve`).
func NewSupervisor(h ProcessHost, hostName string, log *slog.Logger) *Supervisor {
	if log == nil {
		log = slog.Default()
	}
	return &Supervisor{Host: h, Self: process.Supervisor{ID: ids.New("sup"), Host: hostName}, Log: log, procs: map[string]*managed{},
		abandoned: make(chan struct{})}
}

// Recover is the start-up report: the processes earlier instances of the
// same host started are lost (this instance's own, started while the
// report was retried, are left alone).
func (s *Supervisor) Recover(ctx context.Context) error {
	lost, err := s.Host.ProcessRecover(ctx, s.Self, nil)
	if err != nil {
		return fmt.Errorf("supervisor start-up report: %w", err)
	}
	if len(lost) > 0 {
		s.Log.Warn("host: processes of an earlier worker instance are lost (never signalled by their saved PID)", "processes", lost)
	}
	return nil
}

// Wait waits for every supervised process to be reported ended (after
// ctx of Start ended, each is stopped).
func (s *Supervisor) Wait() { s.wg.Wait() }

// Running lists the processes this instance supervises.
func (s *Supervisor) Running() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]string, 0, len(s.procs))
	for id := range s.procs {
		out = append(out, id)
	}
	return out
}

type managed struct {
	id  string
	bg  *hosttools.Background
	pid int

	mu  sync.Mutex
	out map[string][]byte // not yet reported, per stream
}

func (m *managed) take() map[string][]byte {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := map[string][]byte{}
	for st, b := range m.out {
		n := min(len(b), process.MaxReportBytes)
		if n > 0 {
			out[st] = b[:n:n]
			m.out[st] = b[n:]
		}
	}
	return out
}

func (m *managed) pending() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.out[process.Stdout])+len(m.out[process.Stderr]) > 0
}

// maxBuffered bounds what a stream may hold unreported (a store that does
// not answer must not make the worker's memory grow without bound): older
// bytes are dropped, as retention would drop them.
const maxBuffered = process.RetainBytes

func (m *managed) drain(stream string, r io.Reader, done *sync.WaitGroup) {
	defer done.Done()
	buf := make([]byte, 32<<10)
	for {
		n, err := r.Read(buf)
		if n > 0 {
			m.mu.Lock()
			b := append(m.out[stream], buf[:n]...)
			if len(b) > maxBuffered {
				b = append([]byte(nil), b[len(b)-maxBuffered:]...)
			}
			m.out[stream] = b
			m.mu.Unlock()
		}
		if err != nil {
			return
		}
	}
}

// Start records bg (started for task) as a managed process and supervises
// it until it ends or ctx ends (then it is stopped). The result is the
// starting action's: succeeded, with the process id. If the record cannot
// be written the process is killed before anything else reads from it, and
// the error makes the action's outcome unknown (the command may have done
// something in the moment it ran).
func (s *Supervisor) Start(ctx context.Context, task actionflow.Task, bg *hosttools.Background) (actionflow.ToolResult, error) {
	m := &managed{id: process.NewID(), bg: bg, pid: bg.Cmd.Process.Pid, out: map[string][]byte{}}
	self := s.Self
	self.AttemptID = task.AttemptID
	rec, err := s.Host.ProcessStart(ctx, process.Record{ProcessID: m.id, SessionID: task.SessionID, ExecutionID: task.ExecutionID,
		ActionID: task.ActionID, Command: bg.Command, Description: bg.Description, Supervisor: self, PID: m.pid})
	if err != nil {
		_ = syscall.Kill(-m.pid, syscall.SIGKILL) // our own child, not yet reaped: the group id is still ours
		_ = bg.Cmd.Wait()
		return actionflow.ToolResult{}, fmt.Errorf("record managed process: %w", err)
	}
	s.mu.Lock()
	s.procs[m.id] = m
	s.mu.Unlock()
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		s.supervise(ctx, m)
		s.mu.Lock()
		delete(s.procs, m.id)
		s.mu.Unlock()
	}()
	return actionflow.ToolResult{Outcome: lifecycle.OutcomeSucceeded, Shell: bg.Shell.String(),
		Output: fmt.Sprintf("Started managed process %s (status %s). Its output: GET /v1/processes/%s/output; stop it: POST /v1/processes/%s/stop.\n",
			rec.ProcessID, rec.Status, rec.ProcessID, rec.ProcessID)}, nil
}

// supervise drains, reports and stops one process until its end is reported.
func (s *Supervisor) supervise(ctx context.Context, m *managed) {
	log := s.Log.With("process_id", m.id, "pid", m.pid)
	var readers sync.WaitGroup
	readers.Add(2)
	go m.drain(process.Stdout, m.bg.Stdout, &readers)
	go m.drain(process.Stderr, m.bg.Stderr, &readers)
	exited := make(chan struct{})
	var reaped *os.ProcessState
	go func() {
		reaped = waitExit(m.bg.Cmd.Process)
		close(exited)
	}()
	var (
		termAt, killAt time.Time
		lastReport     time.Time
		shutdown       = ctx.Done()
		stopBy         string
		rctx           = context.WithoutCancel(ctx)
	)
	stop := func(why string) {
		if termAt.IsZero() {
			log.Info("host: stopping managed process", "why", why)
			termAt = time.Now()
			killAt = termAt.Add(process.StopGrace)
			_ = syscall.Kill(-m.pid, syscall.SIGTERM)
		}
	}
	report := func(exit *process.Exit) (process.Record, error) {
		rctx, cancel := context.WithTimeout(rctx, 30*time.Second)
		defer cancel()
		lastReport = time.Now()
		rep := process.Report{Supervisor: s.Self, Output: m.take(), Exit: exit}
		if exit != nil {
			rep.StopBy = stopBy
		}
		return s.Host.ProcessReport(rctx, m.id, rep)
	}
	tick := time.NewTicker(process.PollEvery)
	defer tick.Stop()
	for {
		select {
		case <-s.abandoned:
			_ = syscall.Kill(-m.pid, syscall.SIGKILL)
			<-exited
			waitReaders(&readers, hosttools.OutputGrace)
			m.finish(reaped)
			log.Warn("host: managed process killed and abandoned (hard stop); its record stays running until it is found lost")
			return
		case <-exited:
			// The shell ended: what it left in its group ends with it,
			// then the output is drained and the end reported.
			_ = syscall.Kill(-m.pid, syscall.SIGKILL)
			waitReaders(&readers, hosttools.OutputGrace)
			code := m.finish(reaped)
			for attempt := 0; ; attempt++ {
				for m.pending() {
					if _, err := report(nil); err != nil {
						break
					}
				}
				_, err := report(&process.Exit{Code: code})
				var ee *process.EndedError
				var se *process.SupervisorError
				if err == nil || errors.As(err, &ee) || errors.As(err, &se) || attempt >= 5 {
					if err != nil {
						log.Warn("host: end of managed process not recorded", "error", err, "exit_code", code)
					} else {
						log.Info("host: managed process ended", "exit_code", code)
					}
					return
				}
				time.Sleep(time.Duration(attempt+1) * time.Second)
			}
		case <-shutdown:
			shutdown = nil
			stopBy = "worker_shutdown"
			stop("the worker is shutting down")
		case <-tick.C:
			if !killAt.IsZero() && time.Now().After(killAt) {
				_ = syscall.Kill(-m.pid, syscall.SIGKILL)
			}
			if !m.pending() && time.Since(lastReport) < process.PollEvery/2 {
				continue
			}
			rec, err := report(nil)
			var ee *process.EndedError
			var se *process.SupervisorError
			switch {
			case errors.As(err, &ee), errors.As(err, &se):
				// The record ended without us (lost) or is not ours: nobody
				// watches this process any more, so it does not run on.
				stop(err.Error())
			case err != nil:
				log.Warn("host: report on managed process failed; trying again", "error", err)
			case rec.Stop != nil:
				stop("stop requested by " + rec.Stop.By)
			}
		}
	}
}

// finish reaps the shell (unless waitExit did) and closes its pipes; it
// returns the exit code (-1: ended by a signal).
func (m *managed) finish(reaped *os.ProcessState) int {
	if reaped == nil {
		_ = m.bg.Cmd.Wait()
		return m.bg.Cmd.ProcessState.ExitCode()
	}
	m.bg.Stdout.Close()
	m.bg.Stderr.Close()
	return reaped.ExitCode()
}

func waitReaders(wg *sync.WaitGroup, grace time.Duration) {
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(grace):
	}
}
