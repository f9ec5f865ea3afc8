package replay_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/openprogram/lifecycle/shared/actionflow"
	"github.com/openprogram/lifecycle/shared/ids"
	"github.com/openprogram/lifecycle/shared/lifecycle"
	"github.com/openprogram/lifecycle/shared/permission"
	"github.com/openprogram/lifecycle/shared/permission/riskreview"
	"github.com/openprogram/lifecycle/shared/replay"
	"github.com/openprogram/lifecycle/shared/store"
	"github.com/openprogram/lifecycle/shared/store/sqlitestore"
)

// BenchmarkReplay100k replays a candidate policy over 100,000 recorded
// actions of one session, read from the SQLite store through the session
// index (actionflow.History), each decided again by the permission engine
// (the Bash analysis of a distinct command each time). It reports
// actions/s; one iteration is one whole replay.
func BenchmarkReplay100k(b *testing.B) {
	const n = 100_000
	st, err := sqlitestore.Open(filepath.Join(b.TempDir(), "state.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	eng, err := permission.NewEngine(permission.Config{Classifier: riskreview.New(), Counters: st})
	if err != nil {
		b.Fatal(err)
	}
	live := permission.MustParsePolicy(`{"version":"live","mode":"default","allow":["Bash(git *)","Bash(ls *)"],"deny":["Bash(rm *)"],"ask":["Bash(npm *)"]}`)
	templates := []string{"git log -n %d --oneline", "ls -la dir%d", "npm test -- --shard=%d", "rm -rf build%d", "cat notes%d.txt",
		"go test -run TestX%d ./...", "grep -rn TODO%d src", "make target%d", "echo %d > out.txt", "curl -o f%d.tgz https://example.com/f.tgz"}
	// One live decision per template: the replay reads its permission and reason.
	raws := make([]json.RawMessage, len(templates))
	perms := make([]lifecycle.Permission, len(templates))
	for i, tpl := range templates {
		args, _ := json.Marshal(map[string]string{"command": fmt.Sprintf(tpl, 0)})
		a := actionflow.Action{ActionID: "act_seed", SessionID: "ses_bench", Interactive: true}
		pd, err := eng.Decide(context.Background(), permission.Request{Trusted: trusted(a), Policy: live,
			Call: permission.Call{ActionID: a.ActionID, Tool: "Bash", Args: args}})
		if err != nil {
			b.Fatal(err)
		}
		raws[i], _ = json.Marshal(pd)
		perms[i] = pd.Permission
	}
	start := time.Now().Add(-time.Hour)
	var batch []store.Write
	for i := 0; i < n; i++ {
		k := i % len(templates)
		args, _ := json.Marshal(map[string]string{"command": fmt.Sprintf(templates[k], i)})
		id := ids.ActionID(fmt.Sprintf("act_%08d", i))
		a := actionflow.Action{ActionID: id, ExecutionID: ids.ExecutionID(fmt.Sprintf("exe_%04d", i/100)), SessionID: "ses_bench", Tool: "Bash",
			Arguments: args, Interactive: true, CreatedAt: start.Add(time.Duration(i) * time.Millisecond),
			States:   lifecycle.States{Permission: perms[k], Outcome: lifecycle.OutcomeNotStarted, Delivery: lifecycle.DeliveryProjected},
			Decision: &actionflow.Decision{Permission: perms[k], Mode: "initial", Engine: raws[k]}}
		body, _ := json.Marshal(a)
		// The action item as actionflow writes it (shared/store/SCHEMA.md).
		batch = append(batch, store.PutOnceWrite(store.Item{PK: "ACTION#" + string(id), SK: "META", Version: 1,
			GSI1PK: "SESSION#ses_bench", GSI1SK: "ACTION#" + string(id), Body: body}))
		if len(batch) == 25 {
			if _, err := st.Transact(context.Background(), batch); err != nil {
				b.Fatal(err)
			}
			batch = batch[:0]
		}
	}
	r, err := replay.New(replay.Config{Engine: eng, Context: trusted, Actions: actionflow.History{Store: st}, Store: st})
	if err != nil {
		b.Fatal(err)
	}
	cand := json.RawMessage(`{"version":"cand","mode":"default","allow":["Bash(git log *)","Bash(npm test *)","Bash(cat *)"],
		"deny":["Bash(curl *)"],"hardConstraints":["Bash(rm -rf *)"]}`)
	cpu0 := cpuTime()
	b.ResetTimer()
	for b.Loop() {
		rep, err := r.Run(context.Background(), replay.Request{Candidate: cand, Sessions: []ids.SessionID{"ses_bench"},
			Since: start.Add(-time.Minute), Until: time.Now().Add(time.Minute)})
		if err != nil {
			b.Fatal(err)
		}
		if rep.Replayed != n {
			b.Fatalf("replayed %d, want %d", rep.Replayed, n)
		}
	}
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "actions/s")
	// CPU time is the steadier figure on a shared machine: wall time moves
	// with the neighbours' load.
	b.ReportMetric((cpuTime()-cpu0).Seconds()/float64(b.N), "cpu-s/replay")
}

// cpuTime is the process's user and system CPU time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
