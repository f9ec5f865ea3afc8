package audit_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/openprogram/lifecycle/shared/audit"
	"github.com/openprogram/lifecycle/shared/store"
)

const stream = "SESSION#s1"

// chain builds n chained entries the way a store appends them, after
// `legacy` entries appended before the chain existed.
func chain(legacy, n int) []audit.Entry {
	var out []audit.Entry
	var head []byte
	at := time.Date(2031, 1, 2, 3, 4, 5, 0, time.UTC)
	for i := 1; i <= legacy+n; i++ {
		e := store.LogEntry{Stream: stream, Seq: int64(i), At: at.Add(time.Duration(i) * time.Microsecond),
			Body: fmt.Appendf(nil, `{"type":"action.decided","n":%d}`, i)}
		if i > legacy {
			l := store.NextLink(stream, head, e.Seq, store.UnixMicro(e.At), e.Body)
			e.Digest, e.Prev, head = l.Digest, l.Prev, l.Hash
		}
		out = append(out, audit.FromLog(e))
	}
	return out
}

// roundTrip passes entries through JSON Lines, as an export does.
func roundTrip(t *testing.T, es []audit.Entry) []audit.Entry {
	t.Helper()
	var b strings.Builder
	for _, e := range es {
		line, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(line)
		b.WriteByte('\n')
	}
	var out []audit.Entry
	for line := range strings.Lines(b.String()) {
		var e audit.Entry
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatal(err)
		}
		out = append(out, e)
	}
	return out
}

func TestVerify(t *testing.T) {
	cases := []struct {
		name    string
		entries func() []audit.Entry
		anchors []audit.Anchor
		want    *audit.Problem // nil: the chain holds
	}{
		{"an untouched chain holds", func() []audit.Entry { return chain(0, 6) }, nil, nil},
		{"an event re-encoded (other key order, spacing) still holds", func() []audit.Entry {
			es := chain(0, 4)
			es[1].Event = json.RawMessage(`{ "n": 2, "type": "action.decided" }`)
			return es
		}, nil, nil},
		{"entries from before the chain are listed, not covered", func() []audit.Entry { return chain(2, 3) }, nil, nil},
		{"a changed event", func() []audit.Entry {
			es := chain(0, 6)
			es[2].Event = json.RawMessage(`{"type":"action.decided","n":"other"}`)
			return es
		}, nil, &audit.Problem{Seq: 3, Kind: audit.Changed}},
		{"a changed time", func() []audit.Entry {
			es := chain(0, 6)
			es[2].At = es[2].At.Add(time.Second)
			return es
		}, nil, &audit.Problem{Seq: 3, Kind: audit.Changed}},
		{"a line removed", func() []audit.Entry {
			es := chain(0, 6)
			return slices.Delete(es, 3, 4)
		}, nil, &audit.Problem{Seq: 4, Kind: audit.Removed}},
		{"two lines swapped", func() []audit.Entry {
			es := chain(0, 6)
			es[1], es[2] = es[2], es[1]
			return es
		}, nil, &audit.Problem{Seq: 2, Kind: audit.Reordered}},
		{"a line repeated", func() []audit.Entry {
			es := chain(0, 6)
			return slices.Insert(es, 3, es[2])
		}, nil, &audit.Problem{Seq: 3, Kind: audit.Inserted}},
		{"a link stripped after the chain began", func() []audit.Entry {
			es := chain(0, 6)
			es[4].Digest, es[4].Prev, es[4].Hash = "", "", ""
			return es
		}, nil, &audit.Problem{Seq: 5, Kind: audit.Changed}},
		{"two events exchanged, their links left in place", func() []audit.Entry {
			es := chain(0, 6)
			es[3].Event, es[4].Event = es[4].Event, es[3].Event
			return es
		}, nil, &audit.Problem{Seq: 4, Kind: audit.Reordered}},
		{"an entry without a link put in between", func() []audit.Entry {
			es := chain(0, 6)
			for i := 3; i < len(es); i++ {
				es[i].Seq++
			}
			return slices.Insert(es, 3, audit.Entry{Stream: stream, Seq: 4, Event: json.RawMessage(`{"forged":true}`)})
		}, nil, &audit.Problem{Seq: 4, Kind: audit.Inserted}},
		{"the first entry does not start from the genesis", func() []audit.Entry {
			es := chain(0, 3)
			es[0].Prev = strings.Repeat("00", store.ChainHashSize)
			return es
		}, nil, &audit.Problem{Seq: 1, Kind: audit.Changed}},
		{"the tail cut off, caught by the anchor", func() []audit.Entry { return chain(0, 6)[:4] },
			[]audit.Anchor{{Seq: 6, Hash: chain(0, 6)[5].Hash}}, &audit.Problem{Seq: 5, Kind: audit.Removed}},
		{"an anchor that matches", func() []audit.Entry { return chain(0, 6) },
			[]audit.Anchor{{Seq: 4, Hash: chain(0, 6)[3].Hash}}, nil},
		{"an anchor that does not match", func() []audit.Entry { return chain(0, 6) },
			[]audit.Anchor{{Seq: 4, Hash: chain(0, 6)[2].Hash}}, &audit.Problem{Seq: 4, Kind: audit.Changed}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res, err := audit.Verify(roundTrip(t, tc.entries()), tc.anchors...)
			if err != nil {
				t.Fatal(err)
			}
			switch {
			case tc.want == nil && (!res.OK || res.Problem != nil):
				t.Fatalf("want the chain to hold, got %+v", res.Problem)
			case tc.want != nil && (res.OK || res.Problem == nil || res.Problem.Seq != tc.want.Seq || res.Problem.Kind != tc.want.Kind):
				t.Fatalf("got %+v (ok %v), want entry %d %s", res.Problem, res.OK, tc.want.Seq, tc.want.Kind)
			}
			if res.Problem != nil {
				t.Logf("%v", res.Problem)
			}
		})
	}
}

func TestVerifyResult(t *testing.T) {
	es := chain(2, 3)
	res, err := audit.Verify(es)
	if err != nil {
		t.Fatal(err)
	}
	if !res.OK || res.Entries != 5 || res.Unchained != 2 || res.HeadSeq != 5 || res.Head != es[4].Hash || res.Stream != stream {
		t.Fatalf("result %+v", res)
	}
}

func TestVerifyRefusesWhatIsNotAChain(t *testing.T) {
	other := chain(0, 2)
	other[1].Stream = "SESSION#other"
	bad := chain(0, 2)
	bad[1].Digest = "zz"
	zero := chain(0, 1)
	zero[0].Seq = 0
	cases := []struct {
		name    string
		entries []audit.Entry
		want    string
	}{
		{"no entries", nil, "no entries"},
		{"two streams", other, "SESSION#other"},
		{"a digest that is not hex", bad, "digest"},
		{"a sequence number below 1", zero, "start at 1"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := audit.Verify(tc.entries)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v, want one naming %q", err, tc.want)
			}
		})
	}
}
