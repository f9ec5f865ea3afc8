package revision

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/openprogram/lifecycle/shared/store"
	"github.com/openprogram/lifecycle/shared/store/sqlitestore"
)

const baseASL = `{"StartAt":"A","States":{"A":{"Type":"Task","Resource":"${Fn}","Next":"B"},"B":{"Type":"Succeed"}}}`

func mustOf(t *testing.T, asl string, contract int, resumes ...int) Revision {
	t.Helper()
	r, err := Of([]byte(asl), contract, resumes)
	if err != nil {
		t.Fatalf("Of: %v", err)
	}
	return r
}

func TestOfDigest(t *testing.T) {
	base := mustOf(t, baseASL, 1)
	if !strings.HasPrefix(base.ASLDigest, "sha256:") || len(base.ASLDigest) != len("sha256:")+64 {
		t.Fatalf("digest %q is not sha256:<64 hex>", base.ASLDigest)
	}
	if !strings.HasPrefix(base.ID, "rev-") || len(base.ID) != len("rev-")+12 {
		t.Fatalf("id %q is not rev-<12 hex>", base.ID)
	}
	cases := []struct {
		name     string
		asl      string
		contract int
		same     bool
	}{
		{"same bytes", baseASL, 1, true},
		{"keys reordered", `{"States":{"B":{"Type":"Succeed"},"A":{"Next":"B","Resource":"${Fn}","Type":"Task"}},"StartAt":"A"}`, 1, true},
		{"whitespace and indentation", "{\n  \"StartAt\": \"A\",\n  \"States\": {\n    \"A\": {\"Type\": \"Task\", \"Resource\": \"${Fn}\", \"Next\": \"B\"},\n    \"B\": {\"Type\": \"Succeed\"}\n  }\n}\n", 1, true},
		{"a state changed", `{"StartAt":"A","States":{"A":{"Type":"Task","Resource":"${Fn}","Next":"B","TimeoutSeconds":5},"B":{"Type":"Succeed"}}}`, 1, false},
		{"a placeholder renamed", `{"StartAt":"A","States":{"A":{"Type":"Task","Resource":"${Other}","Next":"B"},"B":{"Type":"Succeed"}}}`, 1, false},
		{"same ASL, another contract", baseASL, 2, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := mustOf(t, c.asl, c.contract)
			if got := r.ID == base.ID; got != c.same {
				t.Fatalf("same id = %v, want %v (%s vs %s)", got, c.same, r.ID, base.ID)
			}
			if c.contract == base.Contract {
				if got := r.ASLDigest == base.ASLDigest; got != c.same {
					t.Fatalf("same digest = %v, want %v", got, c.same)
				}
			}
			if err := r.Validate(); err != nil {
				t.Fatalf("Validate: %v", err)
			}
		})
	}
}

func TestOfRefusesBadInput(t *testing.T) {
	cases := []struct {
		name     string
		asl      string
		contract int
		resumes  []int
		want     string
	}{
		{"empty definition", "", 1, nil, "empty"},
		{"not JSON", `{"StartAt":`, 1, nil, "canonicalize"},
		{"contract zero", baseASL, 0, nil, "handler contract must be 1 or more"},
		{"negative resumable contract", baseASL, 2, []int{-1}, "resumable handler contract"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Of([]byte(c.asl), c.contract, c.resumes)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want one containing %q", err, c.want)
			}
		})
	}
}

func TestOfResumesIncludesContract(t *testing.T) {
	r := mustOf(t, baseASL, 3, 1, 1)
	if got := listInts(r.Resumes); got != "1, 3" {
		t.Fatalf("resumes = %s, want 1, 3", got)
	}
}

func TestCanResume(t *testing.T) {
	a := mustOf(t, baseASL, 1)
	changedASL := `{"StartAt":"A","States":{"A":{"Type":"Task","Resource":"${Fn}","Next":"B","TimeoutSeconds":5},"B":{"Type":"Succeed"}}}`
	cases := []struct {
		name    string
		r       Revision
		started Revision
		ok      bool
		want    []string // substrings, one per difference, in order
	}{
		{"same revision", a, a, true, nil},
		{"new ASL, same contract", mustOf(t, changedASL, 1), a, true, nil},
		{"new contract that resumes the old", mustOf(t, changedASL, 2, 1), a, true, nil},
		{"new contract that does not resume the old, same ASL", mustOf(t, baseASL, 2), a, false,
			[]string{"handler contract changed from 1 (revision " + a.ID + ") to 2"}},
		{"new contract and new ASL", mustOf(t, changedASL, 2), a, false,
			[]string{"resumes only contracts 2", "state machine definition changed from " + a.ASLDigest[:19]}},
		{"execution without a revision", a, Revision{}, false, []string{"records no revision"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ok, diffs := c.r.CanResume(c.started)
			if ok != c.ok {
				t.Fatalf("ok = %v, want %v (differences %q)", ok, c.ok, diffs)
			}
			if len(diffs) != len(c.want) {
				t.Fatalf("differences = %q, want %d", diffs, len(c.want))
			}
			for i, w := range c.want {
				if !strings.Contains(diffs[i], w) {
					t.Errorf("difference %d = %q, want it to contain %q", i, diffs[i], w)
				}
			}
		})
	}
}

func TestValidate(t *testing.T) {
	good := mustOf(t, baseASL, 2, 1)
	cases := []struct {
		name string
		mod  func(*Revision)
		want string
	}{
		{"good", func(*Revision) {}, ""},
		{"id of another digest", func(r *Revision) { r.ASLDigest = "sha256:00" }, "does not match"},
		{"contract changed under its id", func(r *Revision) { r.Contract = 1 }, "does not match"},
		{"resumes without its own contract", func(r *Revision) { r.Resumes = []int{1} }, "does not include its own contract"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := good
			r.Resumes = append([]int(nil), good.Resumes...)
			c.mod(&r)
			err := r.Validate()
			if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
				t.Fatalf("err = %v, want %q", err, c.want)
			}
		})
	}
}

func openStore(t *testing.T) store.Store {
	t.Helper()
	db, err := sqlitestore.Open(filepath.Join(t.TempDir(), "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func TestRegistry(t *testing.T) {
	ctx := context.Background()
	reg := NewRegistry(openStore(t))
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	a := Published{Revision: mustOf(t, baseASL, 1), VersionARN: "arn:aws:states:us-east-1:123456789012:stateMachine:m:1", PublishedAt: t0}
	b := Published{Revision: mustOf(t, baseASL, 2), VersionARN: "arn:aws:states:us-east-1:123456789012:stateMachine:m:2", PublishedAt: t0.Add(time.Hour)}

	if _, err := reg.Live(ctx); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("Live before any SetLive: %v, want ErrNotFound", err)
	}
	if _, err := reg.Get(ctx, a.Revision.ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("Get of an unknown revision: %v, want ErrNotFound", err)
	}
	if err := reg.SetLive(ctx, a.Revision.ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("SetLive of an unknown revision: %v, want ErrNotFound", err)
	}
	for _, p := range []Published{b, a} {
		if err := reg.Put(ctx, p); err != nil {
			t.Fatalf("Put %s: %v", p.Revision.ID, err)
		}
	}
	// Idempotent per revision id: the same again (even later) is accepted
	// and keeps the first time; another version ARN is refused.
	again := a
	again.PublishedAt = t0.Add(2 * time.Hour)
	if err := reg.Put(ctx, again); err != nil {
		t.Fatalf("Put again: %v", err)
	}
	other := a
	other.VersionARN = b.VersionARN
	if err := reg.Put(ctx, other); err == nil || !strings.Contains(err.Error(), "already published as") {
		t.Fatalf("Put with another version ARN: %v", err)
	}
	bad := a
	bad.Revision.Contract = 7
	if err := reg.Put(ctx, bad); err == nil {
		t.Fatal("Put of a revision whose id does not match: accepted")
	}
	got, err := reg.Get(ctx, a.Revision.ID)
	if err != nil || !got.PublishedAt.Equal(t0) || got.VersionARN != a.VersionARN || got.Revision.ID != a.Revision.ID {
		t.Fatalf("Get = %+v, %v", got, err)
	}
	list, err := reg.List(ctx)
	if err != nil || len(list) != 2 || list[0].Revision.ID != a.Revision.ID || list[1].Revision.ID != b.Revision.ID {
		t.Fatalf("List = %+v, %v, want a then b", list, err)
	}
	for _, id := range []string{a.Revision.ID, a.Revision.ID, b.Revision.ID} {
		if err := reg.SetLive(ctx, id); err != nil {
			t.Fatalf("SetLive %s: %v", id, err)
		}
		live, err := reg.Live(ctx)
		if err != nil || live.Revision.ID != id {
			t.Fatalf("Live = %+v, %v, want %s", live, err, id)
		}
	}
}
