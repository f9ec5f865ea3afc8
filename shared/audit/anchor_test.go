package audit_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/openprogram/lifecycle/shared/audit"
	"github.com/openprogram/lifecycle/shared/store"
	"github.com/openprogram/lifecycle/shared/store/sqlitestore"
)

// memSink keeps every manifest put, as an Object Lock bucket keeps every version.
type memSink struct{ puts []audit.Manifest }

func (m *memSink) Latest(context.Context) (audit.Manifest, bool, error) {
	if len(m.puts) == 0 {
		return audit.Manifest{}, false, nil
	}
	return m.puts[len(m.puts)-1], true, nil
}

func (m *memSink) Put(_ context.Context, man audit.Manifest) error {
	m.puts = append(m.puts, man)
	return nil
}

func TestAnchorer(t *testing.T) {
	st, err := sqlitestore.Open(filepath.Join(t.TempDir(), "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx := context.Background()
	const active = "OPEN#EXEC"
	open := func(session string, yes bool) {
		t.Helper()
		it := store.Item{PK: "EXEC#" + session, SK: "META", GSI1PK: "SESSION#" + session, GSI1SK: "EXEC#" + session}
		cur, err := st.Get(ctx, it.Key())
		if err == nil {
			it.Version = cur.Version + 1
		} else {
			it.Version = 1
		}
		if yes {
			it.GSI2PK, it.GSI2SK = active, session
		}
		if err := st.CompareAndSwap(ctx, it, it.Version-1, 0); err != nil {
			t.Fatal(err)
		}
	}
	appendTo := func(session string, n int) {
		t.Helper()
		for range n {
			if _, err := st.Append(ctx, "SESSION#"+session, []byte(`{"type":"action.decided"}`)); err != nil {
				t.Fatal(err)
			}
		}
	}
	sink := &memSink{}
	a := &audit.Anchorer{Store: st, Sink: sink, Active: active, Now: func() time.Time { return time.Date(2031, 1, 1, 0, 0, 0, 0, time.UTC) }}
	heads := func(m audit.Manifest) string {
		s := ""
		for _, h := range m.Heads {
			s += fmt.Sprintf("%s@%d ", h.Stream, h.Seq)
		}
		return s
	}
	steps := []struct {
		name  string
		do    func()
		put   bool
		heads string
	}{
		{"nothing open: nothing anchored", func() { appendTo("s0", 2) }, false, ""},
		{"an open session is anchored", func() { open("s1", true); appendTo("s1", 3) }, true, "SESSION#s1@3 "},
		{"no change: nothing put", func() {}, false, ""},
		{"a second session moves, the first is listed as it is", func() { open("s2", true); appendTo("s2", 1) }, true, "SESSION#s1@3 SESSION#s2@1 "},
		{"an execution ends with its last entries: anchored once more", func() { appendTo("s2", 2); open("s2", false) }, true, "SESSION#s1@3 SESSION#s2@3 "},
		{"then the session drops out", func() { appendTo("s1", 1) }, true, "SESSION#s1@4 "},
	}
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			n := len(sink.puts)
			s.do()
			m, err := a.Run(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if put := len(sink.puts) > n; put != s.put || heads(m) != s.heads {
				t.Fatalf("put %v, heads %q; want put %v, heads %q", put, heads(m), s.put, s.heads)
			}
		})
	}
	// The anchored head is what verify checks a chain against.
	last := sink.puts[len(sink.puts)-1].Heads[0]
	es, err := st.ReadLog(ctx, last.Stream, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	entries := make([]audit.Entry, len(es))
	for i, e := range es {
		entries[i] = audit.FromLog(e)
	}
	if res, err := audit.Verify(entries, audit.Anchor{Seq: last.Seq, Hash: last.Hash}); err != nil || !res.OK {
		t.Fatalf("verify against the anchor: %+v %v", res, err)
	}
	if res, _ := audit.Verify(entries[:len(entries)-1], audit.Anchor{Seq: last.Seq, Hash: last.Hash}); res.OK {
		t.Fatal("a chain cut below its anchored head verified")
	}
}
