package clientcmd_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// The revisions listing and the policy command against a recording API:
// what the CLI prints, and the version-fenced command it sends.
func TestRevisionCommands(t *testing.T) {
	var mu sync.Mutex
	var sent []map[string]any
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.Method == "GET" && r.URL.Path == "/v1/revisions":
			if r.URL.Query().Get("session_id") != "ses_cli" {
				http.Error(w, `{"error":{"code":"bad","message":"session"}}`, 400)
				return
			}
			io.WriteString(w, `{"session_id":"ses_cli","live_revision":"rev-b","revisions":[
				{"revision_id":"rev-a","asl_digest":"sha256:aa","contract":1,"resumes":[1],"version_arn":"arn:sm:1","published_at":"2026-12-01T10:00:00Z","live":false,
				 "open_executions":[{"execution_id":"exe_1","session_id":"ses_cli","status":"paused","revision_policy":"use_latest","active_revision":"rev-a","pause_reason":"revision_incompatible"}]},
				{"revision_id":"rev-b","asl_digest":"sha256:bb","contract":2,"resumes":[2],"version_arn":"arn:sm:2","published_at":"2026-12-01T11:00:00Z","live":true,"open_executions":[]}]}`)
		case r.Method == "GET" && r.URL.Path == "/v1/executions/exe_1":
			io.WriteString(w, `{"execution":{"execution_id":"exe_1","session_id":"ses_cli","version":7,"status":"paused"},"checkpoint":{"version":0,"recorded":0},"saved_points":[],"controls":[],"model_requests":[]}`)
		case r.Method == "POST" && r.URL.Path == "/v1/executions/exe_1/commands":
			var body map[string]any
			json.NewDecoder(r.Body).Decode(&body)
			mu.Lock()
			sent = append(sent, body)
			mu.Unlock()
			w.WriteHeader(http.StatusAccepted)
			io.WriteString(w, `{"command_id":"`+body["command_id"].(string)+`","execution_id":"exe_1","type":"set_revision_policy","status":"applied","execution_version":8}`)
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	api := []string{"--api", srv.URL, "--token", "tok"}

	out, err := run(t, append(api, "revisions", "--session", "ses_cli")...)
	if err != nil {
		t.Fatal(err, out)
	}
	for _, want := range []string{"rev-a  contract 1 (resumes 1)  arn:sm:1", "exe_1  paused  use_latest  paused: revision_incompatible", "rev-b  contract 2 (resumes 2)  arn:sm:2", "(live)"} {
		if !strings.Contains(out, want) {
			t.Fatalf("revisions output lacks %q:\n%s", want, out)
		}
	}

	cases := []struct {
		name    string
		args    []string
		version float64 // the expected_version sent; 0: nothing sent
		fails   bool
	}{
		{"reads the version it expects", []string{"revision-policy", "exe_1", "keep_original"}, 7, false},
		{"sends the version the person saw", []string{"revision-policy", "exe_1", "use_latest", "--expected-version", "5"}, 5, false},
		{"an unknown policy is refused before anything is sent", []string{"revision-policy", "exe_1", "newest"}, 0, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			mu.Lock()
			sent = nil
			mu.Unlock()
			out, err := run(t, append(api, tc.args...)...)
			if (err != nil) != tc.fails {
				t.Fatalf("err %v\n%s", err, out)
			}
			mu.Lock()
			defer mu.Unlock()
			if tc.version == 0 {
				if len(sent) != 0 {
					t.Fatalf("sent %v", sent)
				}
				return
			}
			if len(sent) != 1 || sent[0]["type"] != "set_revision_policy" || sent[0]["expected_version"] != tc.version ||
				sent[0]["payload"].(map[string]any)["policy"] != tc.args[2] || sent[0]["command_id"] == "" {
				t.Fatalf("sent %v", sent)
			}
			if !strings.Contains(out, "set_revision_policy applied") {
				t.Fatalf("output %s", out)
			}
		})
	}
}
