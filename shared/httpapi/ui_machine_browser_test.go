package httpapi_test

import (
	"net/http"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/openprogram/lifecycle/shared/actionflow"
	"github.com/openprogram/lifecycle/shared/auth"
	"github.com/openprogram/lifecycle/shared/httpapi"
	"github.com/openprogram/lifecycle/shared/machineview"
	"github.com/openprogram/lifecycle/shared/sfnlocal"
)

// needDagre skips when the console view's layout library is not installed
// (`make ui-assets`), and fails instead under `make unit`, which installs it.
func needDagre(t *testing.T) {
	t.Helper()
	if httpapi.FindDagre() != "" {
		return
	}
	if os.Getenv("LIFECYCLE_UI_DAGRE_REQUIRED") == "1" {
		t.Fatalf("the graph layout library is not installed at %s (make ui-assets)", httpapi.DagrePath)
	}
	t.Skipf("the graph layout library is not installed (make ui-assets installs %s)", httpapi.DagrePath)
}

// The Makefile installs the version the code names.
func TestDagreVersionMatchesTheMakefile(t *testing.T) {
	mk, err := os.ReadFile("../../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^DAGRE_VERSION := (\S+)$`).FindSubmatch(mk)
	if m == nil || string(m[1]) != httpapi.DagreVersion {
		t.Fatalf("Makefile DAGRE_VERSION %q, httpapi.DagreVersion %q", m, httpapi.DagreVersion)
	}
}

// The layout library is served from where make installed it, under the
// UI's headers; a server without it answers 404 naming the make target.
func TestDagreServed(t *testing.T) {
	needDagre(t)
	for _, tc := range []struct {
		name   string
		dagre  string
		status int
		body   string
	}{
		{name: "installed", dagre: "", status: http.StatusOK, body: "dagre"},
		{name: "missing", dagre: "/nonexistent/dagre.min.js", status: http.StatusNotFound, body: ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newStack(t, func(c *httpapi.Config) {
				c.NoUI = false
				if tc.dagre != "" {
					c.Dagre = tc.dagre
				}
			})
			res, err := s.client.Get(s.url + "/ui/vendor/dagre.min.js")
			if err != nil {
				t.Fatal(err)
			}
			res.Body.Close()
			if res.StatusCode != tc.status || (tc.status == 200 && !strings.HasPrefix(res.Header.Get("Content-Type"), "text/javascript")) {
				t.Fatalf("%d %s", res.StatusCode, res.Header.Get("Content-Type"))
			}
		})
	}
}

// waitNavigated waits for sel on the page a click is navigating to (a wait
// that began on the page being left is retried on the new one).
func (p *page) waitNavigated(sel string) {
	p.t.Helper()
	for i := 0; ; i++ {
		_, err := run(p, chromedp.Poll[chromedp.Void]("document.querySelector("+jsString(sel)+") !== null",
			chromedp.WithPollingInterval(50*time.Millisecond), chromedp.WithPollingTimeout(12*time.Second)))
		if err == nil {
			return
		}
		if i < 20 && (strings.Contains(err.Error(), "navigated") || strings.Contains(err.Error(), "context")) {
			time.Sleep(100 * time.Millisecond)
			continue
		}
		p.fail("waiting for %s after navigating: %v", sel, err)
	}
}

// TestUIMachine: the console view of an action's state machine execution,
// reached from the action in Activity, for each lifecycle path: the graph
// drawn from the definition the API returns, the path highlighted (states
// and edges, Catch and Retry included), the current state marked (an
// approval as waiting for a task token), the history with each event's
// input and output. Every expectation is derived from the API's answer, not
// from state names.
func TestUIMachine(t *testing.T) {
	needDagre(t)
	browser := newBrowser(t)
	s := newUIStack(t)
	broken, clock := newBrokenDispatchStack(t)
	const session = "ses_console"
	ended := func(v httpapi.MachineView) bool { return v.Status != "RUNNING" }

	cases := []struct {
		name        string
		tool        string
		brokenStack bool
		decline     bool
		until       func(httpapi.MachineView) bool
		check       func(p *page, v httpapi.MachineView)
	}{
		{name: "allowed", tool: "noop", until: ended, check: func(p *page, v httpapi.MachineView) {
			if n := eval[int](p, `document.querySelectorAll('path.edge[data-kind="catch"][data-taken="true"]').length`); n != 0 {
				p.fail("%d Catch edges drawn taken", n)
			}
			p.wait(`.node[data-type="End"][data-visited="true"]`)
		}},
		{name: "pending approval", tool: "risky",
			until: func(v httpapi.MachineView) bool { return v.Current != nil && v.Current.WaitingForTaskToken },
			check: func(p *page, v httpapi.MachineView) {
				node := `.node[data-state=` + jsString(v.Current.State) + `][data-current="true"][data-waiting="task_token"]`
				p.wait(node)
				if txt := eval[string](p, `document.querySelector(`+jsString(node)+`).textContent`); !strings.Contains(txt, "waiting for a task token") {
					p.fail("the current node reads %q", txt)
				}
				if txt := p.text("#current"); !strings.Contains(txt, "waiting for a task token") || !strings.Contains(txt, v.Current.State) {
					p.fail("the summary's current state reads %q", txt)
				}
				if n := eval[int](p, `document.querySelectorAll('.node[data-current="true"]').length`); n != 1 {
					p.fail("%d nodes marked current", n)
				}
			}},
		{name: "declined", tool: "risky", decline: true, until: ended, check: func(p *page, v httpapi.MachineView) {
			c := catches(v)
			if len(c) != 1 || c[0].Error != actionflow.ApprovalDeclined {
				p.fail("catches %+v", c)
			}
			p.wait(`.edge-label[data-kind="catch"][data-taken="true"]`)
		}},
		{name: "failed dispatch", tool: "broken", brokenStack: true, until: ended, check: func(p *page, v httpapi.MachineView) {
			c := catches(v)
			if len(c) != 1 || c[0].Error != "NotStartedError" {
				p.fail("catches %+v", c)
			}
			p.wait(`path.edge[data-kind="retry"][data-from=` + jsString(c[0].From) + `][data-taken="true"]`)
			if n := eval[string](p, `document.querySelector('.node[data-state=`+jsString(c[0].From)+`]').dataset.retries`); n == "0" || n == "" {
				p.fail("the dispatch node shows %q retries", n)
			}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := s
			var clocks []*sfnlocal.FakeClock
			if tc.brokenStack {
				s, clocks = broken, []*sfnlocal.FakeClock{clock}
			}
			human, agent := s.token(auth.RoleHuman, session), s.token(auth.RoleAgent, session)
			a := s.submit(agent, session, "k-"+tc.name, submitBody(tc.tool, `{"command":"`+tc.name+`"}`, "call_"+strings.ReplaceAll(tc.name, " ", "_")))
			if tc.decline {
				ap := s.pendingApproval(human, session, a.ActionID)
				r := s.do(req{method: "POST", path: "/v1/approvals/" + string(ap.ApprovalID), token: human,
					body: httpapi.DecisionBody{Decision: "decline", Digest: ap.ArgsDigest}})
				if r.status >= 300 {
					t.Fatalf("decline: %d %s", r.status, r.body)
				}
			}
			v := s.waitMachine(human, a.ActionID, tc.name, tc.until, clocks...)
			checkPath(t, v)

			// Reached from the action in Activity.
			p := openPage(t, browser, "console", s.url+"/ui/#token="+human)
			p.ready()
			p.click(branchOf(a.ExecutionID))
			link := execRow(a.ExecutionID) + ` .action[data-action-id="` + string(a.ActionID) + `"] a.machine-link`
			p.click(link)
			p.waitNavigated(`#graph-svg`)
			p.wait(`.exec-status[data-status="` + v.Status + `"]`)

			// Every state of the definition is a node; exactly the states
			// entered are drawn visited, and each transition taken is an
			// edge drawn taken, of the kind the path says.
			def, _ := machineview.ParseDefinition(v.Definition)
			if n := eval[int](p, `document.querySelectorAll('.node:not([data-type="Start"]):not([data-type="End"])').length`); n != len(def.States) {
				p.fail("%d state nodes for %d states", n, len(def.States))
			}
			entered := map[string]bool{}
			for _, st := range v.Path {
				entered[st.State] = true
			}
			for name := range def.States {
				want := strconv.FormatBool(entered[name])
				if got := eval[string](p, `document.querySelector('.node[data-state=`+jsString(name)+`]').dataset.visited`); got != want {
					p.fail("node %s visited=%s, want %s", name, got, want)
				}
			}
			for _, st := range v.Path[1:] {
				kind := map[string]string{machineview.ViaChoice: "choice", machineview.ViaDefault: "default", machineview.ViaCatch: "catch"}[st.Via]
				if kind == "" {
					kind = "next"
				}
				sel := `path.edge[data-kind="` + kind + `"][data-from=` + jsString(st.From) + `][data-to=` + jsString(st.State) + `][data-taken="true"]`
				if st.Rule != nil {
					sel += `[data-rule="` + strconv.Itoa(*st.Rule) + `"]`
				}
				if eval[int](p, `document.querySelectorAll(`+jsString(sel)+`).length`) != 1 {
					p.fail("the edge %s -> %s (%s) is not drawn taken", st.From, st.State, kind)
				}
			}
			transitions := len(v.Path) // Start -> first, and each step after it
			if ended(v) {
				transitions++ // the last state -> End
			}
			if n := eval[int](p, `document.querySelectorAll('path.edge:not([data-kind="retry"])[data-taken="true"]').length`); n != transitions {
				p.fail("%d edges drawn taken; the path has %d transitions", n, transitions)
			}
			tc.check(p, v)

			// The history: every event a row; an entered state's input expands.
			// A running execution may still record events after the state the
			// test waited for (a callback Task's invocation returns after its
			// wait began): the view re-reads while it runs, so compare with the
			// API's count until both settle.
			for deadline := time.Now().Add(15 * time.Second); ; {
				n := eval[int](p, `document.querySelectorAll("#events tbody tr").length`)
				cur := s.machineOf(human, a.ActionID, "?page_size=1000")
				if n == cur.EventCount {
					break
				}
				if time.Now().After(deadline) {
					p.fail("%d history rows for %d events", n, cur.EventCount)
				}
				time.Sleep(250 * time.Millisecond)
			}
			first := `#events tbody tr[data-event-id="` + strconv.FormatInt(v.Path[len(v.Path)-1].EnteredEventID, 10) + `"]`
			p.click(first + ` details summary`)
			if txt := p.text(first + ` pre[data-label="input"]`); !strings.Contains(txt, string(a.ActionID)) {
				p.fail("the entered event's input reads %q", txt)
			}
			p.shot(strings.ReplaceAll(tc.name, " ", "-"))
		})
	}
}
