package mcpconformance

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openprogram/lifecycle/tests/internal/harness"
)

// policy: the conformance client is no person's agent, so nothing waits
// for one (dontAsk: what no rule allows is refused at once); it sees the
// tools the policy leaves visible and calls tools the suite invents
// (test_simple_text, ...), which the lifecycle refuses as isError results.
const policy = `{"version":"conformance.1","mode":"dontAsk","allow":["Bash(echo *)"]}`

// check is one entry of a scenario's checks.json.
type check struct {
	ID           string `json:"id"`
	Status       string `json:"status"`
	ErrorMessage string `json:"errorMessage"`
}

// TestConformanceSuite runs the official MCP conformance suite
// (@modelcontextprotocol/conformance, pinned in the Makefile) against a
// real `lifecycle serve`'s /mcp, every server scenario, and compares which
// pass with expected.json: a scenario that stops passing fails the test,
// and so does one that starts passing while it is still listed as failing
// (update expected.json and EXPECTED.md). The suite's client sends no
// token, so it reaches /mcp through a loopback proxy that adds the agent's
// (and passes every other header, Host included, through unchanged).
func TestConformanceSuite(t *testing.T) {
	node := harness.Tool(t, "mcp-clients", ".tools/node-22.*/node_modules/node-linux-*/bin/node")
	cli := harness.Tool(t, "mcp-clients", ".tools/mcp-conformance-*/node_modules/@modelcontextprotocol/conformance/dist/index.js")
	want := readExpected(t)

	srv := harness.StartServe(t, "ses_conformance")
	srv.SetPolicy(t, policy)
	proxy := tokenProxy(t, srv.MCPURL(), srv.AgentToken(t))

	scenarios := listScenarios(t, node, cli)
	out := t.TempDir()
	start := time.Now()
	timedOut := runScenarios(t, node, cli, proxy, out, scenarios)
	t.Logf("conformance suite: %d scenarios in %s", len(scenarios), time.Since(start).Round(time.Millisecond))

	got := readResults(t, out)
	for name, msg := range timedOut {
		got[name] = result{checks: []check{{ID: name, Status: "FAILURE", ErrorMessage: msg}}}
	}
	var names []string
	for name := range got {
		names = append(names, name)
	}
	sort.Strings(names)
	var table strings.Builder
	for _, name := range names {
		fmt.Fprintf(&table, "  %-34s %s\n", name, got[name].summary())
	}
	t.Logf("scenarios:\n%s", table.String())

	for _, name := range names {
		r := got[name]
		exp, listed := want[name]
		switch {
		case !listed:
			t.Errorf("scenario %s (%s) is new: add it to expected.json and EXPECTED.md", name, r.summary())
		case exp == "pass" && !r.passed():
			t.Errorf("scenario %s no longer passes: %s", name, r.summary())
		case exp == "fail" && r.passed():
			t.Errorf("scenario %s passes now but expected.json lists it as failing: move it to pass (and EXPECTED.md)", name)
		}
	}
	for name := range want {
		if _, ran := got[name]; !ran {
			t.Errorf("scenario %s is in expected.json but the suite did not run it", name)
		}
	}
}

// scenarioTimeout bounds one scenario: the suite's client waits as long as
// the server holds a request, and a scenario that hangs is a failure of
// that scenario, not of the run.
const scenarioTimeout = 2 * time.Minute

// listScenarios is every server scenario the pinned suite knows.
func listScenarios(t *testing.T, node, cli string) []string {
	t.Helper()
	out, err := exec.Command(node, cli, "list", "--server").Output()
	if err != nil {
		t.Fatalf("conformance list --server: %v", err)
	}
	var names []string
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) >= 2 && f[0] == "-" {
			names = append(names, f[1])
		}
	}
	if len(names) == 0 {
		t.Fatalf("conformance list --server named no scenario:\n%s", out)
	}
	return names
}

// runScenarios runs each scenario as its own suite run (two at a time),
// writing results under out; it returns the scenarios that did not end
// within scenarioTimeout, with what they printed.
func runScenarios(t *testing.T, node, cli, url, out string, scenarios []string) map[string]string {
	t.Helper()
	var (
		mu       sync.Mutex
		timedOut = map[string]string{}
		wg       sync.WaitGroup
		work     = make(chan string)
	)
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for name := range work {
				ctx, cancel := context.WithTimeout(context.Background(), scenarioTimeout)
				cmd := exec.CommandContext(ctx, node, cli, "server", "--url", url, "--scenario", name, "-o", out)
				cmd.Env = append(os.Environ(), "NO_PROXY=127.0.0.1,localhost", "HTTP_PROXY=", "HTTPS_PROXY=", "http_proxy=", "https_proxy=")
				cmd.WaitDelay = 5 * time.Second
				b, _ := cmd.CombinedOutput()
				if ctx.Err() != nil {
					mu.Lock()
					timedOut[name] = fmt.Sprintf("no result within %s: %s", scenarioTimeout, bytes.TrimSpace(b))
					mu.Unlock()
				}
				cancel()
			}
		}()
	}
	for _, name := range scenarios {
		work <- name
	}
	close(work)
	wg.Wait()
	return timedOut
}

// result is one scenario's checks.
type result struct{ checks []check }

func (r result) passed() bool {
	n := 0
	for _, c := range r.checks {
		switch c.Status {
		case "FAILURE":
			return false
		case "SUCCESS":
			n++
		}
	}
	return n > 0
}

func (r result) summary() string {
	if r.passed() {
		return "pass"
	}
	var msgs []string
	for _, c := range r.checks {
		if c.Status == "FAILURE" {
			msgs = append(msgs, c.ID+": "+c.ErrorMessage)
		}
	}
	if len(msgs) == 0 {
		return "fail: no successful check"
	}
	return "fail: " + strings.Join(msgs, "; ")
}

// stamp is the run's timestamp the suite appends to a result directory.
var stamp = regexp.MustCompile(`-\d{4}-\d{2}-\d{2}T[\d-]+(Z|\.\d+Z)?$`)

// readResults reads <out>/server-<scenario>-<timestamp>/checks.json.
func readResults(t *testing.T, out string) map[string]result {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(out, "*", "checks.json"))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]result{}
	for _, f := range files {
		dir := filepath.Base(filepath.Dir(f))
		name := stamp.ReplaceAllString(strings.TrimPrefix(dir, "server-"), "")
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var checks []check
		if err := json.Unmarshal(b, &checks); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		got[name] = result{checks: checks}
	}
	return got
}

// readExpected reads expected.json: scenario name → "pass" or "fail".
func readExpected(t *testing.T) map[string]string {
	t.Helper()
	b, err := os.ReadFile("expected.json")
	if err != nil {
		t.Fatal(err)
	}
	var want map[string]string
	if err := json.Unmarshal(b, &want); err != nil {
		t.Fatalf("expected.json: %v", err)
	}
	for name, v := range want {
		if v != "pass" && v != "fail" {
			t.Fatalf("expected.json: scenario %s is %q, want pass or fail", name, v)
		}
	}
	return want
}

// tokenProxy serves target on a loopback port, adding the bearer token to
// every request and passing everything else through, streaming.
func tokenProxy(t *testing.T, target, token string) string {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	rp := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(&url.URL{Scheme: u.Scheme, Host: u.Host})
			r.Out.URL.Path = r.In.URL.Path
			r.Out.Host = r.In.Host // the suite tests the server's Host check
			r.Out.Header.Set("Authorization", "Bearer "+token)
		},
		FlushInterval: -1,
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: rp}
	go func() { _ = hs.Serve(ln) }()
	t.Cleanup(func() { _ = hs.Close() })
	return "http://" + ln.Addr().String() + u.Path
}
