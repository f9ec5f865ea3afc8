package chaos

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

const session = "ses_chaos"

// faultKills makes the faultinject build SIGKILL itself at the named
// lifecycle points, each with probability p (after the projection p/2).
func faultKills(p float64) string {
	return fmt.Sprintf("after_lease=%g,after_start_evidence=%g,after_executor=%g,after_receipt=%g,after_checkpoint=%g,after_projection=%g", p, p, p, p, p, p/2)
}

// Auto mode: rules decide first; what no rule decides goes to the built-in
// reviewer, which blocks `sudo` (a refusal that the session counts).
const policy = `{"version":"chaos.1","mode":"auto",
 "deny":["Bash(rm *)"],
 "ask":["Bash(printf *)"],
 "allow":["Bash(echo *)","Bash(sleep *)"]}`

// item is one action of the run.
type item struct {
	key     string
	kind    string // allow, ask, deny, block (the automatic review refuses it; submitted non-interactive)
	command string
	approve bool // for ask: the person's answer

	mu       sync.Mutex
	actionID string
	decided  string // approve / decline, as the API accepted it
}

func (it *item) id() string {
	it.mu.Lock()
	defer it.mu.Unlock()
	return it.actionID
}

func TestChaosBlackBox(t *testing.T) {
	if testing.Short() {
		t.Skip("black-box chaos run: not in -short")
	}
	n := envInt(t, "CHAOS_N", 300)
	// How hard to kill: the mean time between kills from outside
	// (CHAOS_KILL_EVERY_MS, default 1700: a kill every 0.4-3 s) and the
	// per-point probability of a kill from inside (CHAOS_FAULT_PERMILLE,
	// default 10 = 1%). A long run kills less often per second so that it
	// makes progress between restarts; the kill count is reported.
	killEvery := envInt(t, "CHAOS_KILL_EVERY_MS", 1700)
	faultP := float64(envInt(t, "CHAOS_FAULT_PERMILLE", 10)) / 1000
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("CHAOS_SEED"); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("CHAOS_SEED=%q: %v", s, err)
		}
		seed = v
	}
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	t.Logf("chaos: %d actions, seed %d (replay with CHAOS_SEED=%d)", n, seed, seed)

	root := t.TempDir()
	run := &runState{t: t, seed: seed, root: root}
	defer run.keepArtifactsOnFailure()

	bin := filepath.Join(root, "lifecycle")
	build := exec.Command("go", "build", "-tags", "faultinject", "-o", bin, "github.com/openprogram/lifecycle/cmd/lifecycle")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build lifecycle: %v\n%s", err, out)
	}
	srv := &server{bin: bin, state: filepath.Join(root, "state"), workspace: filepath.Join(root, "workspace"), logs: filepath.Join(root, "logs"), log: run.logf}
	if err := os.MkdirAll(srv.logs, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := srv.start(faultKills(faultP)); err != nil {
		t.Fatal(err)
	}
	defer srv.stop()

	agent := srv.agentToken(t)
	c := &client{srv: srv, log: run.logf}
	if err := c.putPolicy(); err != nil {
		t.Fatal(err)
	}

	items := make([]*item, n)
	for i := range items {
		it := &item{key: fmt.Sprintf("c%d-%05d", seed%100000, i)}
		switch r := rng.IntN(10); {
		case r < 6:
			it.kind = "allow"
			if rng.IntN(3) == 0 {
				it.command = fmt.Sprintf("sleep 0.2 && echo %s >> ledger.txt", it.key)
			} else {
				it.command = fmt.Sprintf("echo %s >> ledger.txt", it.key)
			}
		case r < 7:
			it.kind = "block"
			it.command = fmt.Sprintf("sudo -n touch %s", it.key)
		case r < 8:
			it.kind = "ask"
			it.command = fmt.Sprintf("printf '%%s\\n' %s >> ledger.txt", it.key)
			it.approve = rng.IntN(5) != 0
		default:
			it.kind = "deny"
			it.command = fmt.Sprintf("rm -f %s", it.key)
		}
		items[i] = it
	}
	byTool := map[string]*item{}
	for _, it := range items {
		byTool["tc_"+it.key] = it
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	// The killer: SIGKILL at random moments while the load runs.
	loadDone := make(chan struct{})
	var killerWG sync.WaitGroup
	killerWG.Add(1)
	go func() {
		defer killerWG.Done()
		krng := rand.New(rand.NewPCG(seed+1, seed))
		for {
			select {
			case <-loadDone:
				return
			case <-time.After(time.Duration(killEvery/4+krng.IntN(killEvery*3/2)) * time.Millisecond):
			}
			srv.kill()
		}
	}()

	// The person: decides every pending approval, across restarts.
	var approverWG sync.WaitGroup
	approverWG.Add(1)
	go func() {
		defer approverWG.Done()
		for ctx.Err() == nil {
			c.decidePending(ctx, byTool)
			select {
			case <-ctx.Done():
			case <-time.After(200 * time.Millisecond):
			}
		}
	}()

	// The agents: 8 submit concurrently, each retrying with its key.
	start := time.Now()
	work := make(chan *item)
	var submitWG sync.WaitGroup
	for w := 0; w < 8; w++ {
		submitWG.Add(1)
		go func() {
			defer submitWG.Done()
			for it := range work {
				id, err := c.submit(ctx, agent, it)
				if err != nil {
					run.errorf("submit %s: %v", it.key, err)
					continue
				}
				it.mu.Lock()
				it.actionID = id
				it.mu.Unlock()
			}
		}()
	}
	for _, it := range items {
		work <- it
	}
	close(work)
	submitWG.Wait()
	close(loadDone)
	killerWG.Wait()
	t.Logf("chaos: %d submitted in %s, %d kills so far", n, time.Since(start).Round(time.Second), srv.kills.Load())

	// Settle: one last restart without fault points, then wait for every action.
	srv.kill()
	srv.restart("")
	deadline := time.Now().Add(3*time.Minute + time.Duration(n)*40*time.Millisecond)
	views := map[string]*actionView{}
	for _, it := range items {
		id := it.id()
		if id == "" {
			continue
		}
		v, err := c.waitSettled(ctx, id, deadline)
		if err != nil {
			run.errorf("action %s (%s, %q): %v", id, it.kind, it.command, err)
			continue
		}
		views[id] = v
	}
	cancel()
	approverWG.Wait()
	t.Logf("chaos: settled after %s; %d kills (%d by fault points, %d from outside), %d starts",
		time.Since(start).Round(time.Second), srv.kills.Load(), srv.selfKills.Load(), srv.kills.Load()-srv.selfKills.Load(), srv.starts.Load())

	run.check(items, views, c, srv)
}

// runState collects failures and keeps the artifacts of a failed run.
type runState struct {
	t    *testing.T
	seed uint64
	root string
	mu   sync.Mutex
	log  []string
}

func (r *runState) logf(format string, a ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.log = append(r.log, time.Now().UTC().Format("15:04:05.000 ")+fmt.Sprintf(format, a...))
}

func (r *runState) errorf(format string, a ...any) {
	r.logf("ERROR "+format, a...)
	r.t.Errorf(format, a...)
}

func (r *runState) keepArtifactsOnFailure() {
	if !r.t.Failed() {
		return
	}
	top, err := exec.Command("git", "rev-parse", "--show-toplevel").Output()
	if err != nil {
		r.t.Logf("artifacts not kept: %v", err)
		return
	}
	dst := filepath.Join(strings.TrimSpace(string(top)), "artifacts", "chaos", strconv.FormatUint(r.seed, 10))
	_ = os.RemoveAll(dst)
	if err := os.MkdirAll(dst, 0o755); err != nil {
		r.t.Logf("artifacts not kept: %v", err)
		return
	}
	r.mu.Lock()
	_ = os.WriteFile(filepath.Join(dst, "driver.log"), []byte(strings.Join(r.log, "\n")+"\n"), 0o644)
	r.mu.Unlock()
	_ = os.WriteFile(filepath.Join(dst, "seed"), []byte(strconv.FormatUint(r.seed, 10)+"\n"), 0o644)
	for _, d := range []string{"state", "workspace", "logs"} {
		if out, err := exec.Command("cp", "-a", filepath.Join(r.root, d), dst).CombinedOutput(); err != nil {
			r.t.Logf("copy %s: %v %s", d, err, out)
		}
	}
	r.t.Logf("chaos: the failed run's seed, logs, state directory and workspace are in %s", dst)
}

// check verifies the invariants from the API and the workspace.
func (r *runState) check(items []*item, views map[string]*actionView, c *client, srv *server) {
	t := r.t
	ledger, err := os.ReadFile(filepath.Join(srv.workspace, "ledger.txt"))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	lines := map[string]int{}
	for _, l := range strings.Split(strings.TrimSpace(string(ledger)), "\n") {
		if l != "" {
			lines[l]++
		}
	}
	attention, err := c.needsAttention()
	if err != nil {
		t.Fatal(err)
	}
	counts := map[string]int{}
	blocks, maxTotal := int64(0), int64(0)
	for _, it := range items {
		if lines[it.key] > 1 {
			r.errorf("duplicate execution: %s ran %d times (%s)", it.key, lines[it.key], it.command)
		}
		v := views[it.id()]
		if v == nil {
			continue // reported while settling
		}
		counts[v.States.Outcome]++
		if v.Receipt == nil {
			r.errorf("lost receipt: %s (%s) has outcome %q and no receipt", v.ActionID, it.kind, v.States.Outcome)
		}
		ran := lines[it.key] == 1
		switch v.States.Outcome {
		case "succeeded":
			if !ran {
				r.errorf("%s (%s) succeeded but its line is not in the ledger", v.ActionID, it.key)
			}
		case "not_started":
			if ran {
				r.errorf("%s (%s) is not_started but ran", v.ActionID, it.key)
			}
		case "unknown":
			if !attention[v.ActionID] {
				r.errorf("%s (%s) is unknown but not listed under Needs attention", v.ActionID, it.key)
			}
		default:
			r.errorf("%s (%s) ended with outcome %q", v.ActionID, it.key, v.States.Outcome)
		}
		switch it.kind {
		case "deny":
			if v.States.Permission != "deny" || v.States.Outcome != "not_started" {
				r.errorf("denied %s: permission %q outcome %q", v.ActionID, v.States.Permission, v.States.Outcome)
			}
		case "block":
			if v.States.Permission != "deny" || v.States.Outcome != "not_started" || v.Decision == nil || v.Decision.Reason.Refusals == nil {
				r.errorf("refused %s: permission %q outcome %q, decision %+v", v.ActionID, v.States.Permission, v.States.Outcome, v.Decision)
				continue
			}
			blocks++
			maxTotal = max(maxTotal, v.Decision.Reason.Refusals.Total)
		case "ask":
			if it.decided == "decline" && v.States.Outcome != "not_started" {
				r.errorf("declined %s: outcome %q", v.ActionID, v.States.Outcome)
			}
		}
	}
	// Each refusal is counted exactly once, whatever was killed when: the
	// highest total any refusal saw is the number of refusals.
	if maxTotal != blocks {
		r.errorf("refusal counter: %d refusals, but the counter reached %d", blocks, maxTotal)
	}
	for l := range lines {
		if !strings.HasPrefix(l, fmt.Sprintf("c%d-", r.seed%100000)) {
			r.errorf("the ledger has a line no action wrote: %q", l)
		}
	}
	seqs, err := c.eventSeqs()
	if err != nil {
		t.Fatal(err)
	}
	for i, s := range seqs {
		if s != int64(i+1) {
			r.errorf("event sequence has a gap or repeat at position %d: seq %d", i+1, s)
			break
		}
	}
	t.Logf("chaos: outcomes %v, %d ledger lines, %d refusals counted %d times, %d events, %d unknown listed under Needs attention",
		counts, len(lines), blocks, maxTotal, len(seqs), len(attention))
}

type actionView struct {
	ActionID string `json:"action_id"`
	States   struct {
		Permission string `json:"permission"`
		Outcome    string `json:"outcome"`
		Delivery   string `json:"delivery"`
		Started    bool   `json:"started"`
	} `json:"states"`
	Receipt *struct {
		Outcome string `json:"outcome"`
	} `json:"receipt"`
	Decision *struct {
		Reason struct {
			Code     string `json:"code"`
			Refusals *struct {
				Total int64 `json:"total"`
			} `json:"refusals"`
		} `json:"reason"`
	} `json:"decision"`
}

// server runs and restarts `lifecycle serve`.
type server struct {
	bin, state, workspace, logs string
	log                         func(string, ...any)

	mu        sync.Mutex
	cmd       *exec.Cmd
	exited    chan struct{}
	base      string
	human     string
	faults    string
	stopping  bool
	starts    atomic.Int64
	kills     atomic.Int64
	selfKills atomic.Int64
}

func (s *server) start(faults string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults = faults
	return s.startLocked()
}

func (s *server) startLocked() error {
	n := s.starts.Add(1)
	cmd := exec.Command(s.bin, "serve", "--addr", "127.0.0.1:0", "--state-dir", s.state, "--workspace", s.workspace,
		"--session", session, "--sweep-interval", "2s", "--log-level", "warn")
	cmd.Env = append(os.Environ(), "LIFECYCLE_FAULT_KILL="+s.faults)
	errf, err := os.Create(filepath.Join(s.logs, fmt.Sprintf("serve-%04d.log", n)))
	if err != nil {
		return err
	}
	cmd.Stderr = errf
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start serve: %w", err)
	}
	found := make(chan error, 1)
	go func() {
		sc := bufio.NewScanner(out)
		var base, human string
		for sc.Scan() {
			line := sc.Text()
			fmt.Fprintln(errf, "stdout: "+line)
			f := strings.Fields(line)
			switch {
			case len(f) >= 2 && f[0] == "API" && strings.HasPrefix(f[1], "http"):
				base = strings.TrimSuffix(f[1], "/v1")
			case len(f) >= 3 && f[0] == "Human" && f[1] == "token":
				human = f[2]
			}
			if base != "" && human != "" && found != nil {
				s.base, s.human = base, human
				found <- nil
				found = nil
			}
		}
		if found != nil {
			found <- errors.New("serve ended before printing its address")
		}
	}()
	exited := make(chan struct{})
	go func() {
		err := cmd.Wait()
		errf.Close()
		close(exited)
		s.onExit(cmd, err)
	}()
	select {
	case err := <-found:
		if err != nil {
			return err
		}
	case <-time.After(60 * time.Second):
		_ = cmd.Process.Kill()
		return errors.New("serve did not print its address within 60s")
	}
	s.cmd, s.exited = cmd, exited
	s.log("serve #%d started at %s", n, s.base)
	return nil
}

// onExit restarts a serve that died by itself (a fault point's SIGKILL).
func (s *server) onExit(cmd *exec.Cmd, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd != cmd || s.stopping {
		return
	}
	s.kills.Add(1)
	s.selfKills.Add(1)
	s.log("serve exited by itself: %v", err)
	s.cmd = nil
	for s.startLocked() != nil {
		time.Sleep(200 * time.Millisecond)
	}
}

// kill SIGKILLs the running serve and starts a new one on the same state.
func (s *server) kill() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil || s.stopping {
		return
	}
	cmd, exited := s.cmd, s.exited
	s.cmd = nil
	_ = cmd.Process.Signal(syscall.SIGKILL)
	<-exited
	s.kills.Add(1)
	s.log("SIGKILL serve")
	for err := s.startLocked(); err != nil; err = s.startLocked() {
		s.log("restart failed: %v", err)
		time.Sleep(200 * time.Millisecond)
	}
}

// restart replaces the fault setting for the next starts and restarts.
func (s *server) restart(faults string) {
	s.mu.Lock()
	s.faults = faults
	s.mu.Unlock()
	s.kill()
}

func (s *server) stop() {
	s.mu.Lock()
	s.stopping = true
	cmd, exited := s.cmd, s.exited
	s.mu.Unlock()
	if cmd != nil {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(20 * time.Second):
			_ = cmd.Process.Kill()
		}
	}
}

func (s *server) current() (base, human string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.base, s.human
}

func (s *server) agentToken(t *testing.T) string {
	out, err := exec.Command(s.bin, "token", "--role", "agent", "--session", session, "--state-dir", s.state).Output()
	if err != nil {
		t.Fatalf("agent token: %v", err)
	}
	tok := strings.TrimSpace(string(out))
	if tok == "" || strings.ContainsAny(tok, " \n{") {
		t.Fatalf("agent token: unexpected output %q", out)
	}
	return tok
}

// client talks to whichever serve is running, retrying across restarts.
type client struct {
	srv *server
	log func(string, ...any)
}

var httpc = &http.Client{Timeout: 40 * time.Second}

// do sends one request and retries transport failures and 5xx until the
// deadline: the server may be between a kill and its restart.
func (c *client) do(ctx context.Context, method, path, token string, hdr map[string]string, body any, out any) (int, error) {
	var raw []byte
	if body != nil {
		var err error
		if raw, err = json.Marshal(body); err != nil {
			return 0, err
		}
	}
	deadline := time.Now().Add(5 * time.Minute)
	for attempt := 0; ; attempt++ {
		base, human := c.srv.current()
		tok := token
		if tok == "" {
			tok = human
		}
		req, err := http.NewRequestWithContext(ctx, method, base+path, bytes.NewReader(raw))
		if err != nil {
			return 0, err
		}
		req.Header.Set("Authorization", "Bearer "+tok)
		if body != nil {
			req.Header.Set("Content-Type", "application/json")
		}
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		resp, err := httpc.Do(req)
		if err == nil {
			data, rerr := io.ReadAll(resp.Body)
			resp.Body.Close()
			if rerr == nil && resp.StatusCode < 500 {
				if out != nil && resp.StatusCode < 300 {
					if err := json.Unmarshal(data, out); err != nil {
						return resp.StatusCode, fmt.Errorf("%s %s: decode: %w: %s", method, path, err, data)
					}
				}
				if resp.StatusCode >= 300 {
					return resp.StatusCode, fmt.Errorf("%s %s: %d %s", method, path, resp.StatusCode, bytes.TrimSpace(data))
				}
				return resp.StatusCode, nil
			}
			if rerr == nil {
				err = fmt.Errorf("%d %s", resp.StatusCode, bytes.TrimSpace(data))
			} else {
				err = rerr
			}
		}
		if ctx.Err() != nil {
			return 0, ctx.Err()
		}
		if time.Now().After(deadline) {
			return 0, fmt.Errorf("%s %s: still failing after 5 minutes: %w", method, path, err)
		}
		time.Sleep(time.Duration(50+25*min(attempt, 20)) * time.Millisecond)
	}
}

func (c *client) putPolicy() error {
	_, err := c.do(context.Background(), "PUT", "/v1/sessions/"+session+"/policy", "", nil,
		map[string]any{"expected_version": 0, "policy": json.RawMessage(policy)}, nil)
	return err
}

func (c *client) submit(ctx context.Context, agent string, it *item) (string, error) {
	var a actionView
	_, err := c.do(ctx, "POST", "/v1/sessions/"+session+"/actions", agent, map[string]string{"Idempotency-Key": it.key},
		map[string]any{"tool": "Bash", "arguments": map[string]string{"command": it.command}, "tool_call_id": "tc_" + it.key, "interactive": it.kind != "block"}, &a)
	if err != nil {
		return "", err
	}
	return a.ActionID, nil
}

func (c *client) decidePending(ctx context.Context, byTool map[string]*item) {
	var list struct {
		Approvals []struct {
			ApprovalID string `json:"approval_id"`
			ActionID   string `json:"action_id"`
			ArgsDigest string `json:"args_digest"`
			Status     string `json:"status"`
		} `json:"approvals"`
	}
	if _, err := c.do(ctx, "GET", "/v1/sessions/"+session+"/approvals", "", nil, nil, &list); err != nil {
		return
	}
	for _, ap := range list.Approvals {
		if ap.Status != "pending" {
			continue
		}
		var a struct {
			ToolCallID string `json:"tool_call_id"`
		}
		if _, err := c.do(ctx, "GET", "/v1/actions/"+ap.ActionID, "", nil, nil, &a); err != nil {
			continue
		}
		it := byTool[a.ToolCallID]
		if it == nil {
			continue
		}
		d := "decline"
		if it.approve {
			d = "approve"
		}
		code, err := c.do(ctx, "POST", "/v1/approvals/"+ap.ApprovalID, "", nil, map[string]string{"decision": d, "digest": ap.ArgsDigest}, nil)
		if err == nil || code == http.StatusConflict {
			it.mu.Lock()
			if err == nil {
				it.decided = d
			}
			it.mu.Unlock()
		}
	}
}

// waitSettled waits until the action has an outcome and is projected.
func (c *client) waitSettled(ctx context.Context, id string, deadline time.Time) (*actionView, error) {
	var last actionView
	for first := true; first || time.Now().Before(deadline); first = false {
		var v actionView
		if _, err := c.do(ctx, "GET", "/v1/actions/"+id+"?wait=10", "", nil, nil, &v); err != nil {
			return nil, err
		}
		last = v
		if v.States.Outcome != "" && v.States.Delivery == "projected" {
			return &v, nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return nil, fmt.Errorf("not settled: permission %q outcome %q delivery %q started %v",
		last.States.Permission, last.States.Outcome, last.States.Delivery, last.States.Started)
}

func (c *client) needsAttention() (map[string]bool, error) {
	var act struct {
		NeedsAttention []struct {
			Attention []struct {
				Kind     string `json:"kind"`
				ActionID string `json:"action_id"`
			} `json:"attention"`
		} `json:"needs_attention"`
	}
	if _, err := c.do(context.Background(), "GET", "/v1/sessions/"+session+"/activity", "", nil, nil, &act); err != nil {
		return nil, err
	}
	out := map[string]bool{}
	for _, row := range act.NeedsAttention {
		for _, a := range row.Attention {
			if a.Kind == "unresolved_result" && a.ActionID != "" {
				out[a.ActionID] = true
			}
		}
	}
	return out, nil
}

func (c *client) eventSeqs() ([]int64, error) {
	var seqs []int64
	after := int64(0)
	for {
		var b struct {
			Events []struct {
				Seq int64 `json:"seq"`
			} `json:"events"`
		}
		if _, err := c.do(context.Background(), "GET", fmt.Sprintf("/v1/sessions/%s/events?wait=1&limit=1000&after=%d", session, after), "", nil, nil, &b); err != nil {
			return nil, err
		}
		if len(b.Events) == 0 {
			return seqs, nil
		}
		for _, e := range b.Events {
			seqs = append(seqs, e.Seq)
			after = e.Seq
		}
		sort.Slice(seqs, func(i, j int) bool { return seqs[i] < seqs[j] })
	}
}

func envInt(t *testing.T, name string, def int) int {
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	v, err := strconv.Atoi(s)
	if err != nil || v <= 0 {
		t.Fatalf("%s=%q: want a positive whole number", name, s)
	}
	return v
}
