package process_test

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/openprogram/lifecycle/shared/actionflow"
	"github.com/openprogram/lifecycle/shared/ids"
	"github.com/openprogram/lifecycle/shared/process"
	"github.com/openprogram/lifecycle/shared/store/sqlitestore"
)

type clock struct{ now time.Time }

func (c *clock) Now() time.Time { return c.now }

func newService(t *testing.T) (*process.Service, *clock) {
	t.Helper()
	st, err := sqlitestore.Open(filepath.Join(t.TempDir(), "s.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	c := &clock{now: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
	return &process.Service{Store: st, Clock: c.Now}, c
}

var sup = process.Supervisor{ID: "sup_a", Host: "embedded"}

func started(t *testing.T, s *process.Service, session string) process.Record {
	t.Helper()
	r, err := s.Start(context.Background(), process.Record{ProcessID: process.NewID(), SessionID: ids.SessionID("ses_" + session),
		ExecutionID: "exe_1", ActionID: "act_1", Command: "sleep 9", Supervisor: sup})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// Output keeps the last RetainChunks chunks per stream: a stream that
// wrote far more pages from where its kept bytes begin (truncated), a
// cursor inside the kept bytes reads exactly from there, the last chunk
// fills up across reports, and the streams are independent.
func TestOutputRetentionAndCursor(t *testing.T) {
	ctx := context.Background()
	s, _ := newService(t)
	r := started(t, s, "a")
	// 40 reports of 10 KiB each: 400 KiB, more than RetainBytes.
	var all bytes.Buffer
	for i := 0; i < 40; i++ {
		chunk := bytes.Repeat([]byte{byte('a' + i%26)}, 10<<10)
		all.Write(chunk)
		if _, err := s.Report(ctx, r.ProcessID, process.Report{Supervisor: sup, Output: map[string][]byte{process.Stdout: chunk}}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Report(ctx, r.ProcessID, process.Report{Supervisor: sup, Output: map[string][]byte{process.Stderr: []byte("e")}}); err != nil {
		t.Fatal(err)
	}
	total := int64(all.Len())
	chunks := (total + process.ChunkBytes - 1) / process.ChunkBytes
	keptFrom := (chunks - process.RetainChunks) * process.ChunkBytes
	cases := []struct {
		name      string
		stream    string
		after     int64
		from      int64
		truncated bool
	}{
		{name: "from the start: truncated to what is kept", stream: process.Stdout, after: 0, from: keptFrom, truncated: true},
		{name: "inside the kept bytes", stream: process.Stdout, after: keptFrom + 100, from: keptFrom + 100},
		{name: "at the end", stream: process.Stdout, after: total, from: total},
		{name: "the other stream", stream: process.Stderr, after: 0, from: 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var got bytes.Buffer
			after := tc.after
			for i := 0; ; i++ {
				p, err := s.Output(ctx, r.ProcessID, tc.stream, after, 0)
				if err != nil {
					t.Fatal(err)
				}
				if i == 0 && (p.From != tc.from || p.Truncated != tc.truncated) {
					t.Fatalf("first page from %d truncated %v, want %d %v", p.From, p.Truncated, tc.from, tc.truncated)
				}
				if len(p.Data) > process.MaxPageBytes {
					t.Fatalf("page of %d bytes", len(p.Data))
				}
				got.Write(p.Data)
				if p.Next >= p.Total {
					break
				}
				after = p.Next
			}
			want := all.Bytes()[tc.from:]
			if tc.stream == process.Stderr {
				want = []byte("e")
			}
			if !bytes.Equal(got.Bytes(), want) {
				t.Fatalf("read %d bytes, want %d (from %d)", got.Len(), len(want), tc.from)
			}
		})
	}
	if keptFrom < total-process.RetainBytes {
		t.Fatalf("kept from %d: less than %d bytes kept", keptFrom, process.RetainBytes-process.ChunkBytes)
	}
}

// Reports: only the process's supervisor reports, once it ends nothing
// more is taken, an exit after a stop request is stopped, a stop request
// is kept once (the first command id), bad input names its field.
func TestReportsAndStops(t *testing.T) {
	ctx := context.Background()
	s, _ := newService(t)
	r := started(t, s, "a")
	var se *process.SupervisorError
	if _, err := s.Report(ctx, r.ProcessID, process.Report{Supervisor: process.Supervisor{ID: "sup_b", Host: "embedded"}}); !errors.As(err, &se) {
		t.Fatalf("another supervisor's report: %v", err)
	}
	var ve *actionflow.ValidationError
	if _, err := s.Report(ctx, r.ProcessID, process.Report{Supervisor: sup, Output: map[string][]byte{"stdin": []byte("x")}}); !errors.As(err, &ve) || ve.Field != "output" {
		t.Fatalf("unknown stream: %v", err)
	}
	if _, err := s.RequestStop(ctx, r.ProcessID, process.StopRequest{}); !errors.As(err, &ve) || ve.Field != "command_id" {
		t.Fatalf("stop without command id: %v", err)
	}
	for _, cmd := range []string{"cmd_1", "cmd_2"} {
		res, err := s.RequestStop(ctx, r.ProcessID, process.StopRequest{CommandID: actionflowCmd(cmd), By: "u"})
		if err != nil || res.Status != "accepted" || res.Record.Stop.CommandID != "cmd_1" {
			t.Fatalf("stop %s: %+v %v", cmd, res, err)
		}
	}
	end, err := s.Report(ctx, r.ProcessID, process.Report{Supervisor: sup, Exit: &process.Exit{Code: 143}})
	if err != nil || end.Status != process.Stopped || *end.ExitCode != 143 {
		t.Fatalf("end after a stop: %+v %v", end, err)
	}
	var ee *process.EndedError
	if _, err := s.Report(ctx, r.ProcessID, process.Report{Supervisor: sup, Exit: &process.Exit{Code: 0}}); !errors.As(err, &ee) || ee.Record.Status != process.Stopped {
		t.Fatalf("a second end: %v", err)
	}
	if res, err := s.RequestStop(ctx, r.ProcessID, process.StopRequest{CommandID: "cmd_3"}); err != nil || res.Status != "applied" {
		t.Fatalf("stop of an ended process: %+v %v", res, err)
	}
}

func actionflowCmd(s string) ids.CommandID { return ids.CommandID(s) }

// Lost: a supervisor's start-up report loses its host's earlier
// instances' processes (of its session only, when it names one), never
// another host's; a sweep loses a process whose supervisor went silent.
func TestRecoverAndSweep(t *testing.T) {
	ctx := context.Background()
	s, c := newService(t)
	mine := started(t, s, "a")
	otherSession := started(t, s, "b")
	remote, err := s.Start(ctx, process.Record{ProcessID: process.NewID(), SessionID: "ses_a", ExecutionID: "exe_1", ActionID: "act_2",
		Command: "x", Supervisor: process.Supervisor{ID: "sup_r", Host: "laptop:/ws"}})
	if err != nil {
		t.Fatal(err)
	}
	next := process.Supervisor{ID: "sup_next", Host: "embedded"}
	// The new instance started one before its report was heard.
	own, err := s.Start(ctx, process.Record{ProcessID: process.NewID(), SessionID: "ses_a", ExecutionID: "exe_1", ActionID: "act_3",
		Command: "y", Supervisor: next})
	if err != nil {
		t.Fatal(err)
	}
	lost, err := s.Recover(ctx, next, nil, "ses_a", "")
	if err != nil || len(lost) != 1 || lost[0] != mine.ProcessID {
		t.Fatalf("recover of ses_a: %v %v", lost, err)
	}
	for _, tc := range []struct {
		name string
		id   string
		want process.Status
	}{
		{"the earlier instance's process of the session", mine.ProcessID, process.Lost},
		{"another session's", otherSession.ProcessID, process.Running},
		{"another host's", remote.ProcessID, process.Running},
		{"the reporting instance's own", own.ProcessID, process.Running},
	} {
		r, err := s.Get(ctx, tc.id)
		if err != nil || r.Status != tc.want {
			t.Fatalf("%s: %+v %v, want %s", tc.name, r, err, tc.want)
		}
		if tc.want == process.Lost && !strings.Contains(r.LostReason, "sup_a") {
			t.Fatalf("%s: reason %q", tc.name, r.LostReason)
		}
	}
	c.now = c.now.Add(process.LostAfter + time.Second)
	if _, err := s.Report(ctx, remote.ProcessID, process.Report{Supervisor: remote.Supervisor}); err != nil {
		t.Fatal(err)
	}
	n, err := s.Sweep(ctx, c.now.Add(-process.LostAfter))
	if err != nil || n != 2 { // the other session's and the new instance's own: both silent
		t.Fatalf("sweep: %d %v", n, err)
	}
	if r, _ := s.Get(ctx, otherSession.ProcessID); r.Status != process.Lost {
		t.Fatalf("silent supervisor's process: %+v", r)
	}
	if r, _ := s.Get(ctx, remote.ProcessID); r.Status != process.Running {
		t.Fatalf("a reporting supervisor's process: %+v", r)
	}
}
