package metered_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openprogram/lifecycle/shared/store"
	"github.com/openprogram/lifecycle/shared/store/metered"
	"github.com/openprogram/lifecycle/shared/store/sqlitestore"
)

func open(t *testing.T) *metered.Store {
	t.Helper()
	s, err := sqlitestore.Open(filepath.Join(t.TempDir(), "m.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return metered.Wrap(s)
}

func TestKind(t *testing.T) {
	for _, tc := range []struct{ pk, sk, want string }{
		{"ACTION#act_1", "META", "ACTION/META"},
		{"EXEC#exe_1", "CKPT#00000000000000000002", "EXEC/CKPT"},
		{"SESSION#ses_1", "EVT", "SESSION/EVT"},
		{"plain", "", "plain/"},
	} {
		if got := metered.Kind(tc.pk, tc.sk); got != tc.want {
			t.Errorf("Kind(%q, %q) = %q, want %q", tc.pk, tc.sk, got, tc.want)
		}
	}
}

// Each case writes through the meter and checks what it counted, in all
// and for the kind written.
func TestCounts(t *testing.T) {
	body := func(n int) []byte { return []byte(`"` + strings.Repeat("x", n-2) + `"`) }
	tests := []struct {
		name     string
		write    func(ctx context.Context, m *metered.Store) error
		kind     string
		want     metered.Usage // of the kind; WriteRequests also overall
		wantAll  float64       // overall WCU
		allIndex float64       // overall IndexWCU
	}{
		{name: "a small put is one unit and no index",
			write: func(ctx context.Context, m *metered.Store) error {
				return m.PutOnce(ctx, store.Item{PK: "ACTION#a", SK: "RECEIPT", Version: 1, Body: body(100)})
			},
			kind: "ACTION/RECEIPT", want: metered.Usage{Writes: 1, WriteRequests: 1, WCU: 1}, wantAll: 1},
		{name: "an item over 1 KB in two indexes",
			write: func(ctx context.Context, m *metered.Store) error {
				return m.PutOnce(ctx, store.Item{PK: "ACTION#a", SK: "META", Version: 1, Body: body(1500),
					GSI1PK: "SESSION#s", GSI1SK: "ACTION#a", GSI2PK: "OPEN#ACTION", GSI2SK: "t#a"})
			},
			kind: "ACTION/META", want: metered.Usage{Writes: 1, WriteRequests: 1, WCU: 2, IndexWCU: 4}, wantAll: 2, allIndex: 4},
		{name: "a transaction bills its parts double, its index writes once",
			write: func(ctx context.Context, m *metered.Store) error {
				_, err := m.Transact(ctx, []store.Write{
					store.PutOnceWrite(store.Item{PK: "ACTION#a", SK: "META", Version: 1, Body: body(300), GSI1PK: "SESSION#s", GSI1SK: "ACTION#a"}),
					store.AppendOf("SESSION#s", body(200)),
				})
				return err
			},
			kind: "ACTION/META", want: metered.Usage{Writes: 1, WriteRequests: 1, WCU: 2, IndexWCU: 1}, wantAll: 4, allIndex: 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := open(t)
			if err := tc.write(context.Background(), m); err != nil {
				t.Fatal(err)
			}
			all := m.Usage()
			if all.WCU != tc.wantAll || all.IndexWCU != tc.allIndex || all.WriteRequests != 1 {
				t.Errorf("overall WCU %v, index %v, requests %d; want %v, %v, 1", all.WCU, all.IndexWCU, all.WriteRequests, tc.wantAll, tc.allIndex)
			}
			var got metered.Usage
			for _, k := range m.ByKind() {
				if k.Kind == tc.kind {
					got = k.Usage
				}
			}
			if got.Writes != tc.want.Writes || got.WriteRequests != tc.want.WriteRequests || got.WCU != tc.want.WCU || got.IndexWCU != tc.want.IndexWCU {
				t.Errorf("%s: %+v, want %+v", tc.kind, got, tc.want)
			}
		})
	}
}

func TestSubKinds(t *testing.T) {
	m := open(t)
	ctx := context.Background()
	m.PutOnce(ctx, store.Item{PK: "A#1", SK: "META", Version: 1, Body: []byte(`{}`)})
	before := m.ByKind()
	m.PutOnce(ctx, store.Item{PK: "A#2", SK: "META", Version: 1, Body: []byte(`{}`)})
	m.Append(ctx, "S#1", []byte(`{}`))
	d := metered.SubKinds(m.ByKind(), before)
	got := map[string]int64{}
	for _, k := range d {
		got[k.Kind] = k.Writes
	}
	if got["A/META"] != 1 || got["S/EVT"] != 1 {
		t.Errorf("writes since: %v, want A/META 1 and S/EVT 1", got)
	}
}
