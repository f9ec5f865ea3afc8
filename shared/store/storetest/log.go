package storetest

import (
	"fmt"
	"testing"
	"time"

	"github.com/openprogram/lifecycle/shared/store"
)

func testLog(t *testing.T, open Opener) {
	s := open(t)
	ctx := t.Context()
	p := ns(t)
	stream := p + "EXEC#e1"
	before := time.Now().Add(-time.Minute)

	t.Run("reading an empty stream returns nothing", func(t *testing.T) {
		entries, err := s.ReadLog(ctx, stream, 0, 0)
		mustNil(t, err, "read log")
		if len(entries) != 0 {
			t.Fatalf("empty stream: %d entries", len(entries))
		}
	})

	t.Run("appends number 1, 2, 3", func(t *testing.T) {
		for want := int64(1); want <= 3; want++ {
			seq, err := s.Append(ctx, stream, fmt.Appendf(nil, `{"n":%d}`, want))
			mustNil(t, err, "append")
			if seq != want {
				t.Fatalf("append %d returned seq %d", want, seq)
			}
		}
	})

	t.Run("streams are independent", func(t *testing.T) {
		seq, err := s.Append(ctx, p+"EXEC#e2", []byte("x"))
		mustNil(t, err, "append")
		if seq != 1 {
			t.Fatalf("first entry of another stream: seq %d", seq)
		}
	})

	cases := []struct {
		name  string
		after int64
		limit int
		want  []int64
	}{
		{"from the start", 0, 0, []int64{1, 2, 3}},
		{"after 1", 1, 0, []int64{2, 3}},
		{"limited", 0, 2, []int64{1, 2}},
		{"after the end", 3, 0, nil},
	}
	for _, tc := range cases {
		t.Run("read "+tc.name, func(t *testing.T) {
			entries, err := s.ReadLog(ctx, stream, tc.after, tc.limit)
			mustNil(t, err, "read log")
			if len(entries) != len(tc.want) {
				t.Fatalf("%d entries, want %v", len(entries), tc.want)
			}
			for i, e := range entries {
				if e.Seq != tc.want[i] || e.Stream != stream || string(e.Body) != fmt.Sprintf(`{"n":%d}`, e.Seq) {
					t.Fatalf("entry %d: %+v", i, e)
				}
				if e.At.Before(before) || e.At.After(time.Now().Add(time.Minute)) {
					t.Fatalf("entry %d: At %v is not the append time", i, e.At)
				}
			}
		})
	}

	t.Run("a long stream pages through in order", func(t *testing.T) {
		long := p + "EXEC#long"
		const n = 25
		for i := 1; i <= n; i++ {
			if _, err := s.Append(ctx, long, nil); err != nil {
				t.Fatal(err)
			}
		}
		var seqs []int64
		for after := int64(0); ; {
			entries, err := s.ReadLog(ctx, long, after, 10)
			mustNil(t, err, "read log")
			if len(entries) == 0 {
				break
			}
			for _, e := range entries {
				seqs = append(seqs, e.Seq)
			}
			after = entries[len(entries)-1].Seq
		}
		if len(seqs) != n {
			t.Fatalf("read %d entries, want %d", len(seqs), n)
		}
		for i, seq := range seqs {
			if seq != int64(i+1) {
				t.Fatalf("entry %d has seq %d", i, seq)
			}
		}
	})

	t.Run("entries are items of the stream partition", func(t *testing.T) {
		page, err := s.Query(ctx, stream, store.QueryOptions{SKPrefix: store.LogSKPrefix})
		mustNil(t, err, "query")
		want := []string{store.LogSK(1), store.LogSK(2), store.LogSK(3)}
		got := keysOf(page.Items)
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("log items %v, want %v", got, want)
		}
		if string(page.Items[1].Body) != `{"n":2}` {
			t.Fatalf("log item body %q", page.Items[1].Body)
		}
	})
}
