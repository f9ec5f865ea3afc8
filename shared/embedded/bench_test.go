package embedded_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sfn"

	"github.com/openprogram/lifecycle/shared/actionflow"
	"github.com/openprogram/lifecycle/shared/decider"
	"github.com/openprogram/lifecycle/shared/embedded"
	"github.com/openprogram/lifecycle/shared/ids"
	"github.com/openprogram/lifecycle/shared/permission"
	"github.com/openprogram/lifecycle/shared/permission/riskreview"
	"github.com/openprogram/lifecycle/shared/sfnlocal"
	"github.com/openprogram/lifecycle/shared/store"
	"github.com/openprogram/lifecycle/shared/store/metered"
	"github.com/openprogram/lifecycle/shared/store/sqlitestore"
)

// benchPolicy: noop is allowed, noop_ask asks, noop_deny is denied; all
// three run on the no-op executor.
const benchPolicy = `{"version":"bench","allow":["noop"],"ask":["noop_ask"],"deny":["noop_deny"]}`

type benchStack struct {
	*embedded.Stack
	meter       *metered.Store
	invocations atomic.Int64
	done        sync.Map // action id -> chan struct{}
	cancel      func()
}

func startBench(tb testing.TB, dir string) *benchStack {
	tb.Helper()
	bs := &benchStack{}
	lazy := &lazyDecider{}
	s, err := embedded.Start(context.Background(), embedded.Config{
		StateDir: dir, NoHostWorker: true, Decider: lazy,
		Routes:    map[string]string{"noop_ask": "noop", "noop_deny": "noop"},
		WrapStore: func(st store.Store) store.Store { bs.meter = metered.Wrap(st); return bs.meter },
		WrapFunction: func(name string, f sfnlocal.LambdaFunc) sfnlocal.LambdaFunc {
			return func(ctx context.Context, p []byte) ([]byte, error) { bs.invocations.Add(1); return f(ctx, p) }
		},
		Logger: benchLogger(),
	})
	if err != nil {
		tb.Fatal(err)
	}
	bs.Stack = s
	eng, err := permission.NewEngine(permission.Config{Classifier: riskreview.New(), Counters: s.Store})
	if err != nil {
		tb.Fatal(err)
	}
	lazy.d = &decider.Decider{Engine: eng, Policies: fixedPolicy{permission.MustParsePolicy(benchPolicy)}, ProjectRoot: dir, WorkingDir: dir}
	events, cancel := s.Bus.Subscribe(func(ev actionflow.Event) bool {
		return ev.Type == "action.projected" || ev.Type == "approval.requested"
	})
	bs.cancel = cancel
	human := actionflow.Principal{Subject: "approver", Role: "human", Session: "ses_bench"}
	stop := make(chan struct{})
	go func() {
		for {
			var ev actionflow.Event
			select {
			case <-stop:
				return
			case ev = <-events:
			}
			switch ev.Type {
			case "action.projected":
				if ch, ok := bs.done.LoadAndDelete(ev.ActionID); ok { // projection events may arrive twice
					close(ch.(chan struct{}))
				}
			case "approval.requested": // the automated approver
				var ap actionflow.Approval
				json.Unmarshal(ev.Data, &ap)
				go s.Service.DecideApproval(context.Background(), ap.ApprovalID, actionflow.DecisionApprove, ap.ArgsDigest, human)
			}
		}
	}()
	tb.Cleanup(func() { cancel(); close(stop); s.Close(context.Background()) })
	return bs
}

// run submits n actions of tool from concurrency closed-loop clients (each
// submits its next action when its last one is projected) and returns the
// latency of each (submit until projected).
func (bs *benchStack) run(tb testing.TB, tool string, n, concurrency int) ([]time.Duration, ids.ActionID) {
	return bs.drive(tb, tool, n, concurrency, 0)
}

// drive runs n actions on at most concurrency clients. With rate 0 the
// clients are closed loops. With a rate, action i is due at start + i/rate
// (an open loop: arrivals do not wait for completions) and its latency is
// measured from when it was due, so an action that waited for a free client
// counts its wait (no coordinated omission).
func (bs *benchStack) drive(tb testing.TB, tool string, n, concurrency int, rate float64) ([]time.Duration, ids.ActionID) {
	lat := make([]time.Duration, n)
	var last atomic.Value
	var next atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for w := 0; w < concurrency; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				t0 := time.Now()
				if rate > 0 {
					t0 = start.Add(time.Duration(float64(i) / rate * float64(time.Second)))
					time.Sleep(time.Until(t0))
				}
				ch := make(chan struct{})
				key := ids.New("k")
				// The action id derives from the idempotency key; register before submitting.
				a, _, err := bs.Service.Submit(context.Background(), actionflow.SubmitRequest{SessionID: "ses_bench", ExecutionID: ids.ExecutionID(fmt.Sprintf("exe_b%d", i%64)),
					ToolCallID: "call", Tool: tool, Arguments: json.RawMessage(`{"i":` + strconv.Itoa(i) + `}`), Interactive: true, IdempotencyKey: key,
					Principal: actionflow.Principal{Subject: "agent", Role: "agent"}})
				if err != nil {
					tb.Error(err)
					return
				}
				last.Store(a.ActionID)
				bs.done.Store(a.ActionID, ch)
				// It may have projected before we registered: check the store once.
				if cur, err := bs.Service.GetAction(context.Background(), a.ActionID); err == nil && cur.States.Terminal() {
					if _, mine := bs.done.LoadAndDelete(a.ActionID); mine {
						lat[i] = time.Since(t0)
						continue
					}
				}
				// The bus drops notifications for a slow subscriber (the
				// durable log is the record), so also look at the store.
				poll := time.NewTicker(20 * time.Millisecond)
				deadline := time.After(30 * time.Second)
			wait:
				for {
					select {
					case <-ch:
						break wait
					case <-poll.C:
						if cur, err := bs.Service.GetAction(context.Background(), a.ActionID); err == nil && cur.States.Terminal() {
							bs.done.Delete(a.ActionID)
							break wait
						}
					case <-deadline:
						poll.Stop()
						tb.Errorf("action %s (%s) not projected in 30s", a.ActionID, tool)
						return
					}
				}
				poll.Stop()
				lat[i] = time.Since(t0)
			}
		}()
	}
	wg.Wait()
	id, _ := last.Load().(ids.ActionID)
	return lat, id
}

func percentile(d []time.Duration, p float64) time.Duration {
	s := append([]time.Duration(nil), d...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[int(float64(len(s)-1)*p)]
}

// rssMB reads a /proc/self/status field: VmRSS (all resident memory) or
// RssAnon (the process's own memory, without mapped files).
func rssMB(field string) float64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, field+":") {
			f := strings.Fields(line)
			kb, _ := strconv.ParseFloat(f[1], 64)
			return kb / 1024
		}
	}
	return 0
}

// transitionsOf counts the states an action's execution entered.
func (bs *benchStack) transitionsOf(tb testing.TB, id ids.ActionID) int {
	out, err := bs.SFN.GetExecutionHistory(context.Background(), &sfn.GetExecutionHistoryInput{
		ExecutionArn: aws.String(bs.SFNClient.ExecutionARN(id)), MaxResults: 1000})
	if err != nil {
		tb.Fatal(err)
	}
	n := 0
	for _, e := range out.Events {
		if strings.HasSuffix(string(e.Type), "StateEntered") {
			n++
		}
	}
	return n
}

// populated returns a state directory holding `stored` actions that went
// through the real lifecycle, built once and cached under os.TempDir.
func populated(b *testing.B, stored int) string {
	if stored == 0 {
		return b.TempDir()
	}
	// The schema version is in the name: a cache written by another
	// version (another branch's benchmark on this machine) is never
	// opened, or migrated under it.
	cache := filepath.Join(os.TempDir(), fmt.Sprintf("lifecycle-bench-v3-s%d-%d", sqlitestore.SchemaVersion, stored))
	if _, err := os.Stat(filepath.Join(cache, "done")); err != nil {
		os.RemoveAll(cache)
		b.Logf("populating %d actions through the lifecycle into %s (once)", stored, cache)
		bs := startBench(b, cache)
		bs.run(b, "noop", stored, 64) //nolint:errcheck
		bs.cancel()
		if err := bs.Close(context.Background()); err != nil {
			b.Fatal(err)
		}
		os.WriteFile(filepath.Join(cache, "done"), nil, 0o644)
	}
	dir := b.TempDir()
	for _, name := range []string{"state.db", "state.db-wal"} {
		if err := copyFile(filepath.Join(cache, name), filepath.Join(dir, name)); err != nil && !os.IsNotExist(err) {
			b.Fatal(err)
		}
	}
	return dir
}

// BenchmarkLifecycle runs actions end to end through the embedded stack
// (real ASL, engine, handlers, SQLite) and reports throughput, latency and
// per-action cost, on an empty store and with 100k actions already stored.
// allow, ask and deny run 32 closed-loop clients (latency is then mostly
// queueing: 32 in flight / throughput); allow-c4 runs 4, to show the
// latency of one action when the stack is not saturated; allow-700rps
// offers 700 actions/s in an open loop with at most 32 in flight, the
// reading of issue 4's latency target (docs/decisions.md, "Measuring").
//
//	go test -run '^$' -bench Lifecycle -benchtime 3000x ./shared/embedded/
func BenchmarkLifecycle(b *testing.B) {
	for _, stored := range []int{0, 100_000} {
		for _, path := range []struct {
			name, tool  string
			concurrency int
			rate        float64
		}{{"allow", "noop", 32, 0}, {"ask", "noop_ask", 32, 0}, {"deny", "noop_deny", 32, 0}, {"allow-c4", "noop", 4, 0}, {"allow-700rps", "noop", 32, 700}} {
			b.Run(fmt.Sprintf("%s/stored=%dk", path.name, stored/1000), func(b *testing.B) {
				if stored > 0 && testing.Short() {
					b.Skip("short")
				}
				bs := startBench(b, populated(b, stored))
				bs.run(b, path.tool, 1000, path.concurrency) // warm up (caches of a large store are cold after opening it)
				u0, inv0 := bs.meter.Usage(), bs.invocations.Load()
				runtime.GC()
				b.ResetTimer()
				cpu0 := cpuTime()
				t0 := time.Now()
				lat, sample := bs.drive(b, path.tool, b.N, path.concurrency, path.rate)
				elapsed := time.Since(t0)
				cpu := cpuTime() - cpu0
				b.StopTimer()
				u := bs.meter.Usage().Sub(u0)
				n := float64(b.N)
				b.ReportMetric(n/elapsed.Seconds(), "actions/s")
				b.ReportMetric(float64(percentile(lat, 0.5).Microseconds())/1000, "p50_ms")
				b.ReportMetric(float64(percentile(lat, 0.99).Microseconds())/1000, "p99_ms")
				b.ReportMetric(float64(bs.invocations.Load()-inv0)/n, "invocations/action")
				// CPU per action is the figure to compare across runs on a
				// shared machine (throughput moves with the neighbours).
				b.ReportMetric(float64(cpu.Microseconds())/n, "cpu-µs/action")
				b.ReportMetric(float64(u.WriteRequests)/n, "write_requests/action")
				b.ReportMetric(float64(u.Writes)/n, "writes/action")
				b.ReportMetric(u.WCU/n, "WCU/action")
				b.ReportMetric(u.RCU/n, "RCU/action")
				b.ReportMetric(float64(u.BytesWritten)/n, "bytes/action")
				b.ReportMetric(rssMB("VmRSS"), "rss_MB")
				b.ReportMetric(rssMB("RssAnon"), "anon_MB")
				b.ReportMetric(float64(bs.transitionsOf(b, sample)), "transitions/action")
				b.ReportMetric(0, "ns/op")
			})
		}
	}
}

// cpuTime is the process's user+system CPU time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func benchLogger() *slog.Logger {
	if os.Getenv("BENCH_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

func copyFile(from, to string) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.Create(to)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
