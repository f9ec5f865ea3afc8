package httpapi_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/openprogram/lifecycle/shared/actionflow"
	"github.com/openprogram/lifecycle/shared/auth"
	"github.com/openprogram/lifecycle/shared/decider"
	"github.com/openprogram/lifecycle/shared/embedded"
	"github.com/openprogram/lifecycle/shared/ids"
	"github.com/openprogram/lifecycle/shared/permission"
	"github.com/openprogram/lifecycle/shared/permission/riskreview"
)

// withHostWorker gives the UI stack what `lifecycle serve` runs host tools
// with: the in-process host worker (bubblewrap, a workspace of its own,
// its process supervisor) and the real permission engine under policy.
func withHostWorker(t *testing.T, policy string) func(*embedded.Config) {
	return func(c *embedded.Config) {
		ws := t.TempDir()
		c.NoHostWorker, c.Workspace = false, ws
		pol, err := permission.ParsePolicy([]byte(policy))
		if err != nil {
			t.Fatal(err)
		}
		eng, err := permission.NewEngine(permission.Config{Classifier: riskreview.New(), Counters: c.Store, CredentialStores: []string{}})
		if err != nil {
			t.Fatal(err)
		}
		c.Decider = &decider.Decider{Engine: eng, Policies: onePolicy{pol},
			ProjectRoot: ws, WorkingDir: ws, HomeDir: t.TempDir(), History: actionflow.History{Store: c.Store}}
	}
}

// onePolicy is every session's live policy.
type onePolicy struct{ p *permission.Policy }

func (o onePolicy) Policy(context.Context, ids.SessionID) (*permission.Policy, error) {
	return o.p, nil
}

// watchStops records every data-status a process's Stop or Acknowledge
// receipt shows, so a test sees one that lasts only a moment.
func (p *page) watchStops() {
	p.t.Helper()
	eval[bool](p, `(() => {
		window.__stops = [];
		const seen = new Map();
		new MutationObserver(() => {
			for (const c of document.querySelectorAll('#details .stop-status')) {
				const key = c.closest("[data-process-id]").dataset.processId;
				if (seen.get(key) !== c.dataset.status) {
					seen.set(key, c.dataset.status);
					window.__stops.push({ id: key, status: c.dataset.status, text: c.textContent });
				}
			}
		}).observe(document.getElementById("details"), { subtree: true, childList: true, attributes: true, characterData: true });
		return true;
	})()`)
}

func (p *page) stopStates(id string) []string {
	p.t.Helper()
	var out []string
	for _, c := range eval[[]commandState](p, "window.__stops") {
		if c.ID == id {
			out = append(out, c.Status)
		}
	}
	return out
}

func processRow(exec ids.ExecutionID, id string) string {
	return execRow(exec) + ` .process[data-process-id="` + id + `"]`
}

// TestUIProcesses (issue 14): a background process (Bash with
// run_in_background, run by the in-process host worker in bubblewrap)
// shows running in its execution's details; its branch reads In progress
// although the execution ended; its output follows in the Output panel;
// Stop shows sending → accepted → applied and the process stopped, and the
// branch moves to History. A process lost by its supervisor (a remote
// worker restarted: the recover report) shows in Needs attention with its
// card, whose Acknowledge is answered rejected and takes the branch out of
// Needs attention. Screenshots go where TestUI's do.
func TestUIProcesses(t *testing.T) {
	browser := newBrowser(t)
	s := newUIStackEngine(t, withHostWorker(t, `{"version":"v1","mode":"bypassPermissions"}`))
	const session = "ses_proc"
	human, agent := s.token(auth.RoleHuman, session), s.token(auth.RoleAgent, session)
	post := func(path string, body any, want int) resp {
		t.Helper()
		r := s.do(req{method: "POST", path: path, token: agent, body: body})
		if r.status != want {
			t.Fatalf("POST %s: %d %s", path, r.status, r.body)
		}
		return r
	}

	v := s.submit(agent, session, "k1", submitBody("Bash",
		`{"command":"echo started; echo booting >&2; i=0; while true; do i=$((i+1)); echo tick $i; sleep 0.2; done","run_in_background":true}`, "c1"))
	if got := s.waitAction(agent, v.ActionID); got.States.Outcome != "succeeded" {
		t.Fatalf("the background start: %+v", got)
	}
	var list struct {
		Processes []struct {
			ProcessID string `json:"process_id"`
			Status    string `json:"status"`
		} `json:"processes"`
	}
	s.do(req{method: "GET", path: "/v1/executions/" + string(v.ExecutionID) + "/processes", token: agent}).decode(t, &list)
	if len(list.Processes) != 1 || list.Processes[0].Status != "running" {
		t.Fatalf("processes: %+v", list)
	}
	proc := list.Processes[0].ProcessID
	ver := s.execution(agent, v.ExecutionID).Execution.Version
	post("/v1/executions/"+string(v.ExecutionID)+"/end", map[string]any{"command_id": "cmd_end", "expected_version": ver,
		"payload": map[string]any{"status": "completed"}}, http.StatusAccepted)

	p := openPage(t, browser, "owner", s.url+"/ui/#token="+human)
	p.ready()
	p.watchStops()

	t.Run("running, in progress after its execution ended, with its output", func(t *testing.T) {
		p.click(inSection("in_progress", v.ExecutionID))
		row := processRow(v.ExecutionID, proc)
		p.wait(row + `[data-status="running"]`)
		got := p.text(row + " .process-head")
		for _, w := range []string{"echo started;", "running", "started "} {
			if !strings.Contains(got, w) {
				p.fail("the process row reads %q; want %q in it", got, w)
			}
		}
		if st := p.text(execRow(v.ExecutionID) + " .exec-label"); st != "Completed" {
			p.fail("the execution reads %q, want Completed (ended; its process runs on)", st)
		}
		p.press(row + " .output-toggle")
		p.waitJS("the output to follow", `(() => { const o = document.querySelector(`+jsString(row+" .output-text")+`);
			return !!o && o.innerText.startsWith("started\ntick 1\n") && o.innerText.includes("tick 4\n"); })()`)
		p.waitJS("stderr below stdout", `(() => { const o = document.querySelector(`+jsString(row+` .output-text[data-stream="stderr"]`)+`);
			return !!o && !o.hidden && o.innerText === "booting\n"; })()`)
		p.shot("running")
	})

	t.Run("Stop: sending, accepted, applied; the branch moves to History", func(t *testing.T) {
		row := processRow(v.ExecutionID, proc)
		p.press(row + " button.process-stop")
		p.wait(row + `[data-status="stopped"] .stop-status[data-status="applied"]`)
		states := p.stopStates(proc)
		if len(states) < 2 || states[0] != "sending" || states[len(states)-1] != "applied" {
			p.fail("the Stop receipt went %v; want sending first and applied last", states)
		}
		for i, st := range states[1:] {
			if rank := map[string]int{"sending": 0, "accepted": 1, "applied": 2}; rank[st] < rank[states[i]] {
				p.fail("the Stop receipt went back: %v", states)
			}
		}
		if got := p.text(row + " .process-status"); !strings.HasPrefix(got, "stopped") {
			p.fail("the stopped process reads %q", got)
		}
		p.wait(inSection("history", v.ExecutionID))
		p.waitJS("the output to end", `(document.querySelector(`+jsString(row+" .output")+`) || {dataset: {}}).dataset.ended === "true"`)
		p.noNotice()
		p.shot("stopped")
	})

	t.Run("a lost process shows in Needs attention until acknowledged", func(t *testing.T) {
		// A remote worker ("laptop") records a process for a call of a new
		// execution, then restarts: its new instance's start-up report
		// names nothing running, so the process is lost.
		w := s.submit(agent, session, "k2", submitBody("noop", `{}`, "c2"))
		s.waitAction(agent, w.ActionID)
		const lost = "proc_remote1"
		post("/v1/hosts/tasks/"+string(w.ActionID)+"/process", map[string]any{"process_id": lost, "command": "npm run dev",
			"supervisor": map[string]any{"id": "sup_first", "host": "laptop"}}, http.StatusCreated)
		var rec struct {
			Lost []string `json:"lost"`
		}
		post("/v1/hosts/processes/recover", map[string]any{"supervisor": map[string]any{"id": "sup_second", "host": "laptop"},
			"running": []string{}}, http.StatusOK).decode(t, &rec)
		if len(rec.Lost) != 1 || rec.Lost[0] != lost {
			t.Fatalf("recover: %+v", rec)
		}

		branch := inSection("needs_attention", w.ExecutionID)
		p.wait(branch + ` .attention[data-kinds~="process_lost"]`)
		if got := p.text(branch + " .attention"); !strings.Contains(got, "Background process lost") || !strings.Contains(got, "npm run dev") {
			p.fail("the Needs attention row reads %q", got)
		}
		p.click(branch)
		cardSel := execRow(w.ExecutionID) + ` .attention-card[data-kind="process_lost"][data-process-id="` + lost + `"]`
		p.wait(cardSel)
		p.wait(processRow(w.ExecutionID, lost) + `[data-status="lost"]`)
		if got := p.text(cardSel); !strings.Contains(got, "Background process lost") || !strings.Contains(got, "it may still run") {
			p.fail("the card reads %q", got)
		}
		p.shot("lost")
		p.press(cardSel + " button.acknowledge")
		// Answered rejected (nothing can stop it from here), which
		// acknowledges it: the card goes with the next read of Activity.
		p.wait(inSection("in_progress", w.ExecutionID))
		if n := eval[int](p, `document.querySelectorAll('.section[data-section="needs_attention"] button.branch').length`); n != 0 {
			p.fail("%d branches still need attention", n)
		}
		if states := p.stopStates(lost); len(states) < 2 || states[0] != "sending" || states[len(states)-1] != "rejected" {
			p.fail("the Acknowledge receipt went %v", states)
		}
		p.noNotice()
		p.shot("acknowledged")
	})
}
