package sfnlocal

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/openprogram/lifecycle/shared/store/metered"
	"github.com/openprogram/lifecycle/shared/store/sqlitestore"
	"github.com/openprogram/lifecycle/statemachines"
)

// BenchmarkAllowPath runs the project's definition down its allow path
// (four Task states) with functions that do nothing, over SQLite, many
// executions in flight: the engine's own cost per lifecycle.
//
// "machine" starts on the state machine, "alias" on a `live` alias routed
// to a published version (how the lifecycle pins its actions; issue 15).
//
//	go test -run '^$' -bench AllowPath -benchtime 2000x ./shared/sfnlocal/
func BenchmarkAllowPath(b *testing.B) {
	b.Run("machine", func(b *testing.B) { benchmarkAllowPath(b, false) })
	b.Run("alias", func(b *testing.B) { benchmarkAllowPath(b, true) })
}

func benchmarkAllowPath(b *testing.B, onAlias bool) {
	db, err := sqlitestore.Open(filepath.Join(b.TempDir(), "state.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	c := &countingStore{Store: db}
	m := metered.Wrap(c)
	lf := &lifecycleFunctions{permission: "allow", executor: "sync"}
	functions := map[string]LambdaFunc{}
	for name, f := range lf.functions() {
		functions[arn(name)] = func(ctx context.Context, p []byte) ([]byte, error) {
			out, err := f(ctx, p)
			lf.mu.Lock()
			lf.calls = lf.calls[:0]
			lf.mu.Unlock()
			return out, err
		}
	}
	var wg sync.WaitGroup
	eng, err := New(Config{
		Store: m, Definition: statemachines.ActionLifecycle, Substitutions: lifecycleSubstitutions(),
		StateMachineName: "action-lifecycle", Functions: functions,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		OnStatusChange: func(_ context.Context, ev StatusChangeEvent) {
			if ev.Detail.Status != "RUNNING" {
				if ev.Detail.Status != "SUCCEEDED" {
					b.Errorf("execution %s: %s", ev.Detail.Name, ev.Detail.Status)
				}
				wg.Done()
			}
		},
	})
	if err != nil {
		b.Fatal(err)
	}
	if err := eng.Start(context.Background()); err != nil {
		b.Fatal(err)
	}
	defer eng.Close(context.Background())
	target := eng.StateMachineArn()
	if onAlias {
		ctx := context.Background()
		if _, err := eng.publishVersion(ctx, publishInput{StateMachineArn: target}); err != nil {
			b.Fatal(err)
		}
		if _, err := eng.createAlias(ctx, createAliasInput{Name: "live", RoutingConfiguration: []routeInput{{StateMachineVersionArn: eng.VersionArn(1), Weight: 100}}}); err != nil {
			b.Fatal(err)
		}
		target = eng.AliasArn("live")
	}
	const inFlight = 128
	sem := make(chan struct{}, inFlight)
	before := m.Usage()
	b.ResetTimer()
	cpu0 := cpuTime()
	start := time.Now()
	wg.Add(b.N)
	for i := range b.N {
		sem <- struct{}{}
		go func() {
			defer func() { <-sem }()
			input := fmt.Sprintf(`{"action_id": "act_%08d", "execution_id": "exe_%08d"}`, i, i)
			if _, err := eng.startExecution(context.Background(), startExecutionInput{StateMachineArn: target, Name: fmt.Sprintf("act_%08d", i), Input: aws.String(input)}); err != nil {
				b.Error(err)
				wg.Done()
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	cpu := cpuTime() - cpu0
	b.StopTimer()
	used := m.Usage().Sub(before)
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "exec/s")
	// CPU time per execution is steadier than wall time on a shared machine.
	b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-µs/exec")
	b.ReportMetric(float64(used.Writes)/float64(b.N), "writes/exec")
	b.ReportMetric(float64(used.Reads)/float64(b.N), "reads/exec")
	b.ReportMetric(float64(used.BytesWritten)/float64(b.N), "bytes/exec")
}

// cpuTime is the process's user+system CPU time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
