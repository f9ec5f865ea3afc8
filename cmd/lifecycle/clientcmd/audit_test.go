package clientcmd_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	_ "modernc.org/sqlite"

	"github.com/openprogram/lifecycle/cmd/lifecycle/clientcmd"
	"github.com/openprogram/lifecycle/shared/actionflow"
	"github.com/openprogram/lifecycle/shared/audit"
	"github.com/openprogram/lifecycle/shared/auth"
	"github.com/openprogram/lifecycle/shared/httpapi"
	"github.com/openprogram/lifecycle/shared/store"
	"github.com/openprogram/lifecycle/shared/store/sqlitestore"
)

// logRow is one log entry row as the SQLite file holds it.
type logRow struct {
	sk                 string
	at                 int64
	body, digest, prev []byte
}

// TestAuditExportAndVerify: the decision log of a session through the API
// and the CLI. A human exports and verifies it; an agent is refused (and
// the refusal is itself an entry); then the SQLite file is tampered with
// each way, behind the service's back, and verify (live and from an export)
// fails naming the entry, with a non-zero exit.
func TestAuditExportAndVerify(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "state.db")
	st, err := sqlitestore.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	tk := &tasks{done: map[string]bool{}}
	svc, err := actionflow.New(actionflow.Config{Store: st, Decider: askAll{}, Starter: noStart{}, Tasks: tk, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	keys, err := auth.LoadOrCreateKeys(dir)
	if err != nil {
		t.Fatal(err)
	}
	iss, _ := auth.NewIssuer(keys)
	h, err := httpapi.New(httpapi.Config{Service: svc, Auth: iss, Logger: quiet, NoUI: true})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	human, _ := iss.Issue("human", "ses_audit", time.Hour)
	agent, _ := iss.Issue("agent", "ses_audit", time.Hour)
	api := []string{"--api", srv.URL, "--token", human}

	// A decision to record: submitted, asked, approved.
	out, err := run(t, append(api, "submit", "--tool", "Bash", "--args", `{"command":"make deploy"}`, "--json")...)
	if err != nil {
		t.Fatal(err, out)
	}
	var v httpapi.ActionView
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	si := actionflow.StepInput{ActionID: v.ActionID, ExecutionID: v.ExecutionID}
	if _, err := svc.Authorize(ctx, si); err != nil {
		t.Fatal(err)
	}
	si.Mode, si.TaskToken = "await", "tok-1"
	w, err := svc.ApprovalStep(ctx, si)
	if err != nil {
		t.Fatal(err)
	}
	if out, err := run(t, append(api, "approve", string(w.ApprovalID))...); err != nil {
		t.Fatal(err, out)
	}

	// The agent of the session may not read the audit log; its refusal is recorded.
	res, err := http.DefaultClient.Do(bearer(t, srv.URL+"/v1/sessions/ses_audit/audit", agent))
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusForbidden {
		t.Fatalf("agent reading the audit log: %d", res.StatusCode)
	}

	// The human pages the chain; every entry is linked.
	var page httpapi.AuditPage
	res, err = http.DefaultClient.Do(bearer(t, srv.URL+"/v1/sessions/ses_audit/audit?after=1&limit=2", human))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.NewDecoder(res.Body).Decode(&page); err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("page: %d %v", res.StatusCode, err)
	}
	res.Body.Close()
	if len(page.Entries) != 2 || page.Entries[0].Seq != 2 || page.Next != 3 || page.Entries[1].Prev != page.Entries[0].Hash {
		t.Fatalf("page after 1, limit 2: %+v", page)
	}
	var types []string
	for _, e := range exportEntries(t, api) {
		var ev actionflow.Event
		json.Unmarshal(e.Event, &ev)
		types = append(types, ev.Type)
	}
	want := []string{"action.submitted", "action.decided", "approval.requested", "approval.approved", "audit.denied"}
	if !slices.Equal(types, want) {
		t.Fatalf("entries %v, want %v", types, want)
	}

	// export --out, then verify the file and the live log.
	file := filepath.Join(dir, "export.jsonl")
	if out, err := run(t, append(api, "audit", "export", "--out", file)...); err != nil {
		t.Fatal(err, out)
	}
	if out, err := run(t, "audit", "verify", "--file", file); err != nil || !strings.Contains(out, "ok: 5 entries of SESSION#ses_audit") {
		t.Fatalf("verify the export: %v\n%s", err, out)
	}
	if out, err := run(t, append(api, "audit", "verify")...); err != nil || !strings.Contains(out, "ok: 5 entries") {
		t.Fatalf("verify live: %v\n%s", err, out)
	}

	// Tamper with the file behind the service's back, each way; restore in between.
	db, err := sql.Open("sqlite", path+"?_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	stream := "SESSION#ses_audit"
	rows := readRows(t, db, stream)
	put := func(seq int64, r logRow) {
		t.Helper()
		if _, err := db.Exec(`INSERT INTO items (pk, sk, version, fence, body, at, digest, prev) VALUES (?, ?, 1, 0, ?, ?, ?, ?)
			ON CONFLICT (pk, sk) DO UPDATE SET body = excluded.body, at = excluded.at, digest = excluded.digest, prev = excluded.prev`,
			stream, store.LogSK(seq), r.body, r.at, r.digest, r.prev); err != nil {
			t.Fatal(err)
		}
	}
	restore := func() {
		t.Helper()
		if _, err := db.Exec(`DELETE FROM items WHERE pk = ? AND sk LIKE 'EVT#%'`, stream); err != nil {
			t.Fatal(err)
		}
		for i, r := range rows {
			put(int64(i+1), r)
		}
	}
	cases := []struct {
		name   string
		tamper func()
		want   string
	}{
		{"a decision's body changed", func() {
			r := rows[1]
			r.body = []byte(strings.Replace(string(r.body), `"ask"`, `"allow"`, 1))
			put(2, r)
		}, "entry 2 changed"},
		{"an entry removed", func() {
			if _, err := db.Exec(`DELETE FROM items WHERE pk = ? AND sk = ?`, stream, store.LogSK(3)); err != nil {
				t.Fatal(err)
			}
		}, "entry 3 removed"},
		{"two entries swapped", func() { put(3, rows[3]); put(4, rows[2]) }, "entry 3 reordered"},
		{"an entry inserted", func() {
			for i := len(rows); i >= 3; i-- {
				put(int64(i+1), rows[i-1])
			}
			put(3, logRow{at: rows[1].at, body: []byte(`{"type":"approval.approved","forged":true}`)})
		}, "entry 3 inserted"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			defer restore()
			tc.tamper()
			out, err := run(t, append(api, "audit", "verify")...)
			if !errors.Is(err, clientcmd.ErrChainBroken) || !strings.Contains(out, tc.want) {
				t.Fatalf("verify live: %v\n%s\nwant %q", err, out, tc.want)
			}
			tampered := filepath.Join(t.TempDir(), "tampered.jsonl")
			if _, err := run(t, append(api, "audit", "export", "--out", tampered)...); err != nil {
				t.Fatal(err)
			}
			if out, err := run(t, "audit", "verify", "--file", tampered); !errors.Is(err, clientcmd.ErrChainBroken) || !strings.Contains(out, tc.want) {
				t.Fatalf("verify the export: %v\n%s\nwant %q", err, out, tc.want)
			}
		})
	}
	if out, err := run(t, append(api, "audit", "verify")...); err != nil {
		t.Fatalf("after restoring: %v\n%s", err, out)
	}

	// An export edited by hand: two lines swapped, the tail cut (caught by --anchor).
	lines := strings.SplitAfter(strings.TrimSuffix(readFile(t, file), "\n"), "\n")
	swapped := filepath.Join(dir, "swapped.jsonl")
	os.WriteFile(swapped, []byte(lines[0]+lines[2]+lines[1]+strings.Join(lines[3:], "")), 0o600)
	if out, err := run(t, "audit", "verify", "--file", swapped); !errors.Is(err, clientcmd.ErrChainBroken) || !strings.Contains(out, "entry 2 reordered") {
		t.Fatalf("swapped lines: %v\n%s", err, out)
	}
	var last audit.Entry
	json.Unmarshal([]byte(lines[4]), &last)
	cut := filepath.Join(dir, "cut.jsonl")
	os.WriteFile(cut, []byte(strings.Join(lines[:4], "")), 0o600)
	if out, err := run(t, "audit", "verify", "--file", cut); err != nil {
		t.Fatalf("a cut export verifies without an anchor (only an anchor can tell): %v\n%s", err, out)
	}
	if out, err := run(t, "audit", "verify", "--file", cut, "--anchor", "5:"+last.Hash); !errors.Is(err, clientcmd.ErrChainBroken) || !strings.Contains(out, "entry 5 removed") {
		t.Fatalf("cut export with the anchor: %v\n%s", err, out)
	}
	// Input that is not an export is an error naming the line, not a verdict.
	bad := filepath.Join(dir, "bad.jsonl")
	os.WriteFile(bad, []byte(lines[0]+"{\"seq\": \"x\"}\n"), 0o600)
	if _, err := run(t, "audit", "verify", "--file", bad); err == nil || errors.Is(err, clientcmd.ErrChainBroken) || !strings.Contains(err.Error(), "line 2") {
		t.Fatalf("a malformed export: %v", err)
	}
	if _, err := run(t, "audit", "verify", "--file", file, "--anchor", "5"); err == nil || !strings.Contains(err.Error(), "SEQ:HASH") {
		t.Fatalf("a malformed anchor: %v", err)
	}
}

func bearer(t *testing.T, url, token string) *http.Request {
	t.Helper()
	req, err := http.NewRequest("GET", url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	return req
}

func exportEntries(t *testing.T, api []string) []audit.Entry {
	t.Helper()
	out, err := run(t, append(api, "audit", "export")...)
	if err != nil {
		t.Fatal(err, out)
	}
	var es []audit.Entry
	for line := range strings.Lines(out) {
		var e audit.Entry
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatalf("export line %q: %v", line, err)
		}
		es = append(es, e)
	}
	return es
}

func readRows(t *testing.T, db *sql.DB, stream string) []logRow {
	t.Helper()
	rs, err := db.Query(`SELECT sk, at, body, digest, prev FROM items WHERE pk = ? AND sk LIKE 'EVT#%' ORDER BY sk`, stream)
	if err != nil {
		t.Fatal(err)
	}
	defer rs.Close()
	var out []logRow
	for rs.Next() {
		var r logRow
		if err := rs.Scan(&r.sk, &r.at, &r.body, &r.digest, &r.prev); err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
	}
	return out
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
