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
	"github.com/openprogram/lifecycle/shared/awscost"
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

	mu     sync.Mutex
	lambda map[string]awscost.Invocation // by function: invocations and billed ms
}

// invoked counts one invocation of function name that took d, billed as
// Lambda bills it (rounded up to 1 ms).
func (bs *benchStack) invoked(name string, d time.Duration) {
	bs.mu.Lock()
	defer bs.mu.Unlock()
	if bs.lambda == nil {
		bs.lambda = map[string]awscost.Invocation{}
	}
	inv := bs.lambda[name]
	inv.Count++
	inv.BilledMs += awscost.BilledMs(float64(d.Microseconds()) / 1000)
	bs.lambda[name] = inv
}

func (bs *benchStack) invocationsSoFar() map[string]awscost.Invocation {
	bs.mu.Lock()
	defer bs.mu.Unlock()
	out := map[string]awscost.Invocation{}
	for k, v := range bs.lambda {
		out[k] = v
	}
	return out
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
			return func(ctx context.Context, p []byte) ([]byte, error) {
				bs.invocations.Add(1)
				t0 := time.Now()
				defer func() { bs.invoked(name, time.Since(t0)) }()
				return f(ctx, p)
			}
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
				go func() {
					// On AWS the approver reads the pending approval and
					// posts its decision: two calls of the api function.
					t0 := time.Now()
					s.Service.DecideApproval(context.Background(), ap.ApprovalID, actionflow.DecisionApprove, ap.ArgsDigest, human)
					d := time.Since(t0)
					bs.invoked("api", d)
					bs.invoked("api", d)
				}()
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
				tSubmit := time.Now()
				a, _, err := bs.Service.Submit(context.Background(), actionflow.SubmitRequest{SessionID: "ses_bench", ExecutionID: ids.ExecutionID(fmt.Sprintf("exe_b%d", i%64)),
					ToolCallID: "call", Tool: tool, Arguments: json.RawMessage(`{"i":` + strconv.Itoa(i) + `}`), Interactive: true, IdempotencyKey: key,
					Principal: actionflow.Principal{Subject: "agent", Role: "agent"}})
				if err != nil {
					tb.Error(err)
					return
				}
				bs.invoked("api", time.Since(tSubmit)) // POST .../actions through the api function on AWS
				last.Store(a.ActionID)
				bs.done.Store(a.ActionID, ch)
				// It may have projected before we registered: check the store once.
				if cur, err := bs.Service.GetAction(context.Background(), a.ActionID); err == nil && cur.States.Terminal() {
					if _, mine := bs.done.LoadAndDelete(a.ActionID); mine {
						lat[i] = time.Since(t0)
						bs.invoked("api", lat[i])
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
				// On AWS the client reads the outcome with GET
				// /v1/actions/{id}?wait=, which holds the api function
				// until the outcome is known: billed for the latency.
				bs.invoked("api", lat[i])
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
// For allow, ask and deny it also prints what a million such actions would
// cost on AWS (shared/awscost): Step Functions transitions, each function's
// invocations and billed milliseconds, the lifecycle table's DynamoDB units
// (its indexes' writes included, the embedded engine's own records left
// out), HTTP API requests and EventBridge events; then each record's writes.
// usd/M-actions, table_WCU/action and aws_WRU/action are the same figures
// on the benchmark line.
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
				u0, inv0, k0, l0 := bs.meter.Usage(), bs.invocations.Load(), bs.meter.ByKind(), bs.invocationsSoFar()
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
				b.ReportMetric(0, "ns/op")
				kinds := metered.SubKinds(bs.meter.ByKind(), k0)
				aws := awsUsage(kinds, n)
				var tableWCU float64
				for _, k := range kinds {
					if !engineKind(k.Kind) {
						tableWCU += k.WCU / n
					}
				}
				// WCU counts the engine's own records too; table_WCU only the
				// lifecycle's (what its DynamoDB table bills on AWS), and
				// aws_WRU adds the writes of its two indexes.
				b.ReportMetric(tableWCU, "table_WCU/action")
				b.ReportMetric(aws.WriteUnits, "aws_WRU/action")
				aws.Transitions = float64(bs.transitionsOf(b, sample))
				b.ReportMetric(aws.Transitions, "transitions/action")
				aws.HTTPRequests = 2 // POST the action, GET its outcome with ?wait=
				if path.tool == "noop_ask" {
					aws.HTTPRequests += 2 // the approver's read of the approval and its decision
				}
				aws.Invocations = map[string]awscost.Invocation{}
				for name, inv := range bs.invocationsSoFar() {
					inv.Count -= l0[name].Count
					inv.BilledMs -= l0[name].BilledMs
					aws.Invocations[name] = awscost.Invocation{Count: inv.Count / n, BilledMs: inv.BilledMs / n}
				}
				lines, err := awscost.USEast1.PerMillion(aws, benchMemory(b))
				if err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(awscost.Total(lines), "usd/M-actions")
				if b.N > 1 && (path.rate == 0 && path.concurrency == 32) {
					// The table of the closed-loop paths (allow, ask, deny);
					// the others differ only in Lambda durations.
					fmt.Print(awscost.Format(fmt.Sprintf("cost of %s (stored=%dk), $ per million actions at %s list prices of %s", path.name, stored/1000,
						awscost.USEast1.Region, awscost.USEast1.AsOf), lines))
					fmt.Print(kindTable(kinds, n))
				}
			})
		}
	}
}

// engineKind tells the embedded engine's own records (SFNEXEC, SFNHIST
// and its open-work index partition) from the lifecycle's: on AWS they are
// Step Functions' state, billed as transitions, not DynamoDB writes.
func engineKind(kind string) bool { return strings.Contains(kind, "SFN") }

// awsUsage is the DynamoDB share of what an action would use on AWS: the
// lifecycle table's write units (its indexes' included), read units, and
// the events published (every event appended to a session log is put on
// EventBridge).
func awsUsage(kinds []metered.KindUsage, n float64) awscost.Usage {
	var u awscost.Usage
	for _, k := range kinds {
		if engineKind(k.Kind) {
			continue
		}
		u.WriteUnits += (k.WCU + k.IndexWCU) / n
		u.ReadUnits += k.RCU / n
		if k.Kind == "SESSION/EVT" {
			u.Events += float64(k.Writes) / n
		}
	}
	return u
}

// kindTable lists an action's writes by record kind (see metered.Kind).
func kindTable(kinds []metered.KindUsage, n float64) string {
	var b strings.Builder
	fmt.Fprintf(&b, "  %-22s %8s %6s %6s %9s %7s %6s\n", "writes by record", "requests", "items", "WCU", "index WCU", "bytes", "RCU")
	var t metered.Usage
	for _, k := range kinds {
		if k.Writes == 0 && k.Reads == 0 {
			continue
		}
		kind := k.Kind
		if engineKind(kind) {
			kind += " (engine)"
		} else {
			t.WriteRequests += k.WriteRequests
			t.Writes += k.Writes
			t.WCU += k.WCU
			t.IndexWCU += k.IndexWCU
			t.BytesWritten += k.BytesWritten
			t.RCU += k.RCU
		}
		fmt.Fprintf(&b, "  %-22s %8.2f %6.2f %6.2f %9.2f %7.0f %6.2f\n", kind, float64(k.WriteRequests)/n, float64(k.Writes)/n, k.WCU/n, k.IndexWCU/n, float64(k.BytesWritten)/n, k.RCU/n)
	}
	fmt.Fprintf(&b, "  %-22s %8s %6.2f %6.2f %9.2f %7.0f %6.2f\n", "lifecycle table", "", float64(t.Writes)/n, t.WCU/n, t.IndexWCU/n, float64(t.BytesWritten)/n, t.RCU/n)
	return b.String()
}

var (
	memoryOnce sync.Once
	memoryMB   map[string]float64
	memoryErr  error
)

// benchMemory is the memory of each function as infra/stack deploys it.
func benchMemory(tb testing.TB) map[string]float64 {
	memoryOnce.Do(func() {
		memoryMB, memoryErr = awscost.FunctionMemory(filepath.Join("..", "..", "infra", "stack", "functions.go"))
	})
	if memoryErr != nil {
		tb.Fatal(memoryErr)
	}
	return memoryMB
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
