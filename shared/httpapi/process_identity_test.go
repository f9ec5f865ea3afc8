package httpapi_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/openprogram/lifecycle/shared/apiclient"
	"github.com/openprogram/lifecycle/shared/auth"
	"github.com/openprogram/lifecycle/shared/httpapi"
	"github.com/openprogram/lifecycle/shared/process"
)

// A managed process's reports and start-up recoveries are bound to the
// identity (token subject) that recorded it: the supervisor id is not a
// credential (anyone who may read the record sees it), so another host
// token of the same session naming it gets 403 and changes nothing.
func TestProcessReportsAreBoundToTheRecordingIdentity(t *testing.T) {
	s := newStack(t)
	subject := func(name string) string {
		tok, err := s.issuer.IssueSubject(name, auth.RoleAgent, "ses_1", time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	worker, other := subject("host-a"), subject("host-b")
	task := s.submit(worker, "ses_1", "bash", submitBody("Bash", `{"command":"sleep 60 &"}`, "c1"))
	sup := process.Supervisor{ID: "sup_a1", Host: "laptop:/ws"}
	r := s.do(req{method: "POST", path: "/v1/hosts/tasks/" + string(task.ActionID) + "/process", token: worker,
		body: httpapi.HostProcessBody{ProcessID: process.NewID(), Command: "sleep 60", Supervisor: sup}})
	if r.status != http.StatusCreated {
		t.Fatalf("record: %d %s", r.status, r.body)
	}
	var rec process.Record
	r.decode(t, &rec)
	if rec.RegisteredBy != "host-a" {
		t.Fatalf("registered_by %q", rec.RegisteredBy)
	}
	report := func(token string, rep process.Report) resp {
		return s.do(req{method: "POST", path: "/v1/hosts/processes/" + rec.ProcessID + "/report", token: token, body: rep})
	}
	recoverAs := func(token string, sup process.Supervisor) []string {
		r := s.do(req{method: "POST", path: "/v1/hosts/processes/recover?session_id=ses_1", token: token, body: httpapi.HostRecoverBody{Supervisor: sup}})
		if r.status != http.StatusOK {
			t.Fatalf("recover: %d %s", r.status, r.body)
		}
		var res httpapi.HostRecoverResult
		r.decode(t, &res)
		return res.Lost
	}
	status := func() process.Record {
		got, err := process.ForFlow(s.svc).Get(context.Background(), rec.ProcessID)
		if err != nil {
			t.Fatal(err)
		}
		return got
	}

	for _, tc := range []struct {
		name  string
		token string
		rep   process.Report
		code  int
		error string
	}{
		{"another token of the session, naming the supervisor, cannot end it", other,
			process.Report{Supervisor: sup, Exit: &process.Exit{Code: 0}}, http.StatusForbidden, "forbidden"},
		{"nor write its output", other,
			process.Report{Supervisor: sup, Output: map[string][]byte{"stdout": []byte("forged")}}, http.StatusForbidden, "forbidden"},
		{"the session's human token neither", s.token(auth.RoleHuman, "ses_1"),
			process.Report{Supervisor: sup, Exit: &process.Exit{Code: 0}}, http.StatusForbidden, "forbidden"},
		{"the recording identity with another supervisor id is still refused", worker,
			process.Report{Supervisor: process.Supervisor{ID: "sup_a2", Host: sup.Host}}, http.StatusConflict, "not_supervisor"},
		{"the recording identity and supervisor report", worker,
			process.Report{Supervisor: sup, Output: map[string][]byte{"stdout": []byte("real")}}, http.StatusOK, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := report(tc.token, tc.rep)
			if r.status != tc.code {
				t.Fatalf("status %d, want %d: %s", r.status, tc.code, r.body)
			}
			if tc.error != "" && r.errorBody(t).Code != tc.error {
				t.Fatalf("error %s", r.body)
			}
			if got := status(); got.Status != process.Running {
				t.Fatalf("the process is %s", got.Status)
			}
		})
	}
	if got := status(); got.Streams["stdout"].Bytes != int64(len("real")) {
		t.Fatalf("stdout %+v: a refused report wrote output", got.Streams)
	}

	t.Run("the client reads the refusal as not this supervisor's (it then stops the process)", func(t *testing.T) {
		host := apiclient.Host{Client: &apiclient.Client{BaseURL: s.url, Token: other, HTTP: s.client}}
		_, err := host.ProcessReport(context.Background(), rec.ProcessID, process.Report{Supervisor: sup})
		var se *process.SupervisorError
		if !errors.As(err, &se) {
			t.Fatalf("got %T %v", err, err)
		}
	})
	t.Run("another identity's start-up report naming the host loses nothing", func(t *testing.T) {
		if lost := recoverAs(other, process.Supervisor{ID: "sup_b1", Host: sup.Host}); len(lost) != 0 {
			t.Fatalf("lost %v", lost)
		}
		if got := status(); got.Status != process.Running {
			t.Fatalf("the process is %s", got.Status)
		}
	})
	t.Run("the recording identity's next instance loses it", func(t *testing.T) {
		lost := recoverAs(worker, process.Supervisor{ID: "sup_a2", Host: sup.Host})
		if len(lost) != 1 || lost[0] != rec.ProcessID {
			t.Fatalf("lost %v", lost)
		}
		if got := status(); got.Status != process.Lost || !strings.Contains(got.LostReason, "sup_a1") {
			t.Fatalf("the process is %s (%s)", got.Status, got.LostReason)
		}
	})
}
