package sfnclient_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/openprogram/lifecycle/shared/actionflow"
	"github.com/openprogram/lifecycle/shared/ids"
	"github.com/openprogram/lifecycle/shared/revision"
	"github.com/openprogram/lifecycle/shared/sfnclient"
	"github.com/openprogram/lifecycle/shared/store/sqlitestore"
)

// The adapter answers from the registry: what is live, whether one
// published revision can resume another (with the differences), and a
// revision the registry does not have is unavailable, never guessed.
func TestRevisionsFromTheRegistry(t *testing.T) {
	ctx := context.Background()
	db, err := sqlitestore.Open(filepath.Join(t.TempDir(), "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	reg := revision.NewRegistry(db)
	def := []byte(`{"StartAt":"Done","States":{"Done":{"Type":"Succeed"}}}`)
	a, _ := revision.Of(def, 1, nil)
	b, _ := revision.Of(def, 2, []int{1}) // resumes A's contract
	c, _ := revision.Of(def, 3, nil)      // resumes only its own
	for i, r := range []revision.Revision{a, b, c} {
		if err := reg.Put(ctx, revision.Published{Revision: r, VersionARN: "arn:aws:states:us-east-1:1:stateMachine:sm:" + string(rune('1'+i)), PublishedAt: time.Now()}); err != nil {
			t.Fatal(err)
		}
	}
	if err := reg.SetLive(ctx, c.ID); err != nil {
		t.Fatal(err)
	}
	r := &sfnclient.Revisions{Registry: reg}
	if live, err := r.Live(ctx); err != nil || live != ids.RevisionID(c.ID) {
		t.Fatalf("live %q %v", live, err)
	}
	cases := []struct {
		name              string
		candidate, active string
		ok                bool
		diff              string
		unavailable       bool
	}{
		{"a newer contract that declares it resumes the old one", b.ID, a.ID, true, "", false},
		{"a newer contract that does not", c.ID, a.ID, false, "handler contract changed from 1", false},
		{"the same revision", a.ID, a.ID, true, "", false},
		{"an active revision the registry lost", c.ID, "rev-000000000000", false, "", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ok, diffs, err := r.CanResume(ctx, ids.RevisionID(tc.candidate), ids.RevisionID(tc.active))
			if tc.unavailable {
				if !errors.Is(err, actionflow.ErrRevisionUnavailable) {
					t.Fatalf("err %v", err)
				}
				return
			}
			if err != nil || ok != tc.ok || (tc.diff != "" && !strings.Contains(strings.Join(diffs, "\n"), tc.diff)) {
				t.Fatalf("ok %v diffs %v err %v", ok, diffs, err)
			}
		})
	}
	// Starting on a revision the registry does not have starts nothing.
	if err := r.StartOn(ctx, "act_1", "rev-000000000000", []byte(`{}`)); !errors.Is(err, actionflow.ErrRevisionUnavailable) {
		t.Fatalf("start on an unknown revision: %v", err)
	}
}
