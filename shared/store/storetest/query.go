package storetest

import (
	"fmt"
	"slices"
	"testing"

	"github.com/openprogram/lifecycle/shared/store"
)

func testQuery(t *testing.T, open Opener) {
	s := open(t)
	ctx := t.Context()
	p := ns(t)
	pk := p + "EXEC#e1"

	// Partition: ACTION#a00..a11, APPROVAL#a00..a02, CKPT, META, RECEIPT#a00..a04,
	// plus an item in another partition that must never show up.
	var want []string
	put := func(sk string) {
		t.Helper()
		mustNil(t, s.PutOnce(ctx, store.Item{PK: pk, SK: sk, Version: 1, Body: []byte(sk)}), "put "+sk)
		want = append(want, sk)
	}
	for i := range 12 {
		put(fmt.Sprintf("ACTION#a%02d", i))
	}
	for i := range 3 {
		put(fmt.Sprintf("APPROVAL#a%02d", i))
	}
	put("CKPT")
	put("META")
	for i := range 5 {
		put(fmt.Sprintf("RECEIPT#a%02d", i))
	}
	mustNil(t, s.PutOnce(ctx, store.Item{PK: p + "EXEC#e2", SK: "ACTION#a00", Version: 1}), "put other partition")
	slices.Sort(want)
	filter := func(prefix string) []string {
		var out []string
		for _, sk := range want {
			if len(sk) >= len(prefix) && sk[:len(prefix)] == prefix {
				out = append(out, sk)
			}
		}
		return out
	}
	reversed := func(in []string) []string {
		out := slices.Clone(in)
		slices.Reverse(out)
		return out
	}
	actions := filter("ACTION#")

	cases := []struct {
		name     string
		opts     store.QueryOptions
		wantKeys []string
		wantNext string
	}{
		{name: "whole partition ascending", opts: store.QueryOptions{}, wantKeys: want},
		{name: "whole partition descending", opts: store.QueryOptions{Descending: true}, wantKeys: reversed(want)},
		{name: "prefix", opts: store.QueryOptions{SKPrefix: "APPROVAL#"}, wantKeys: filter("APPROVAL#")},
		{name: "prefix matching one exact key", opts: store.QueryOptions{SKPrefix: "CKPT"}, wantKeys: []string{"CKPT"}},
		{name: "prefix matching nothing", opts: store.QueryOptions{SKPrefix: "CMD#"}, wantKeys: nil},
		{name: "limit with more left gives Next", opts: store.QueryOptions{SKPrefix: "ACTION#", Limit: 5},
			wantKeys: actions[:5], wantNext: actions[4]},
		{name: "limit equal to what is left gives no Next", opts: store.QueryOptions{SKPrefix: "ACTION#", Limit: 12},
			wantKeys: actions},
		{name: "after inside the prefix", opts: store.QueryOptions{SKPrefix: "ACTION#", After: actions[4], Limit: 5},
			wantKeys: actions[5:10], wantNext: actions[9]},
		{name: "after a key that does not exist", opts: store.QueryOptions{SKPrefix: "ACTION#", After: "ACTION#a04x"},
			wantKeys: actions[5:]},
		{name: "after below the prefix starts at the prefix", opts: store.QueryOptions{SKPrefix: "APPROVAL#", After: "ACTION#a99"},
			wantKeys: filter("APPROVAL#")},
		{name: "after beyond the prefix is empty", opts: store.QueryOptions{SKPrefix: "ACTION#", After: "B"}, wantKeys: nil},
		{name: "after without a prefix", opts: store.QueryOptions{After: "CKPT"}, wantKeys: []string{"META", "RECEIPT#a00", "RECEIPT#a01", "RECEIPT#a02", "RECEIPT#a03", "RECEIPT#a04"}},
		{name: "after the last key is empty", opts: store.QueryOptions{After: want[len(want)-1]}, wantKeys: nil},
		{name: "descending with prefix and limit", opts: store.QueryOptions{SKPrefix: "ACTION#", Descending: true, Limit: 3},
			wantKeys: reversed(actions)[:3], wantNext: actions[9]},
		{name: "descending after inside the prefix", opts: store.QueryOptions{SKPrefix: "ACTION#", Descending: true, After: actions[2]},
			wantKeys: reversed(actions[:2])},
		{name: "descending after beyond the prefix starts at its end", opts: store.QueryOptions{SKPrefix: "APPROVAL#", Descending: true, After: "B"},
			wantKeys: reversed(filter("APPROVAL#"))},
		{name: "descending after below the prefix is empty", opts: store.QueryOptions{SKPrefix: "RECEIPT#", Descending: true, After: "A"}, wantKeys: nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			page, err := s.Query(ctx, pk, tc.opts)
			mustNil(t, err, "query")
			if got := keysOf(page.Items); !slices.Equal(got, tc.wantKeys) {
				t.Fatalf("keys %v, want %v", got, tc.wantKeys)
			}
			if page.Next != tc.wantNext {
				t.Fatalf("Next %q, want %q", page.Next, tc.wantNext)
			}
			for _, it := range page.Items {
				if it.PK != pk || string(it.Body) != it.SK || it.Version != 1 {
					t.Fatalf("item %s: pk %q body %q version %d", it.SK, it.PK, it.Body, it.Version)
				}
			}
		})
	}

	// The checkpoint read (actionflow.GetCheckpoint): one prefix matches a
	// key and the keys that extend it; descending, limit 1, the longest
	// (newest) comes first, and the bare key only when it is alone.
	t.Run("a prefix that is also a key, descending, limit 1", func(t *testing.T) {
		ck := p + "EXEC#e3"
		newest := func() string {
			t.Helper()
			page, err := s.Query(ctx, ck, store.QueryOptions{SKPrefix: "CKPT", Descending: true, Limit: 1})
			mustNil(t, err, "query")
			if len(page.Items) != 1 {
				t.Fatalf("%d items, want 1", len(page.Items))
			}
			return page.Items[0].SK
		}
		mustNil(t, s.PutOnce(ctx, store.Item{PK: ck, SK: "CKPT", Version: 3}), "put CKPT")
		mustNil(t, s.PutOnce(ctx, store.Item{PK: ck, SK: "META", Version: 1}), "put META")
		if got := newest(); got != "CKPT" {
			t.Fatalf("newest %q, want CKPT", got)
		}
		for _, sk := range []string{"CKPT#00000000000000000002", "CKPT#00000000000000000010", "CKPT#00000000000000000003"} {
			mustNil(t, s.PutOnce(ctx, store.Item{PK: ck, SK: sk, Version: 1}), "put "+sk)
		}
		if got := newest(); got != "CKPT#00000000000000000010" {
			t.Fatalf("newest %q, want CKPT#00000000000000000010", got)
		}
	})

	t.Run("paging through with After visits every item once", func(t *testing.T) {
		for _, desc := range []bool{false, true} {
			var got []string
			opts := store.QueryOptions{Limit: 4, Descending: desc}
			for pages := 0; ; pages++ {
				if pages > len(want) {
					t.Fatalf("paging does not end: %v", got)
				}
				page, err := s.Query(ctx, pk, opts)
				mustNil(t, err, "query")
				got = append(got, keysOf(page.Items)...)
				if page.Next == "" {
					break
				}
				opts.After = page.Next
			}
			wantOrder := want
			if desc {
				wantOrder = reversed(want)
			}
			if !slices.Equal(got, wantOrder) {
				t.Fatalf("descending=%v: paged keys %v, want %v", desc, got, wantOrder)
			}
		}
	})

	t.Run("default limit is 100 and the cap is 1000", func(t *testing.T) {
		big := p + "EXEC#big"
		for i := range store.DefaultLimit + 5 {
			mustNil(t, s.PutOnce(ctx, store.Item{PK: big, SK: fmt.Sprintf("EVTX#%04d", i), Version: 1}), "put")
		}
		page, err := s.Query(ctx, big, store.QueryOptions{})
		mustNil(t, err, "query")
		if len(page.Items) != store.DefaultLimit || page.Next != fmt.Sprintf("EVTX#%04d", store.DefaultLimit-1) {
			t.Fatalf("default page: %d items, Next %q", len(page.Items), page.Next)
		}
		page, err = s.Query(ctx, big, store.QueryOptions{Limit: 1 << 20})
		mustNil(t, err, "query")
		if len(page.Items) != store.DefaultLimit+5 || page.Next != "" {
			t.Fatalf("capped page: %d items, Next %q", len(page.Items), page.Next)
		}
	})

	t.Run("empty partition", func(t *testing.T) {
		page, err := s.Query(ctx, p+"EXEC#none", store.QueryOptions{})
		mustNil(t, err, "query")
		if len(page.Items) != 0 || page.Next != "" {
			t.Fatalf("empty partition: %v next %q", keysOf(page.Items), page.Next)
		}
	})
}

func testQueryIndex(t *testing.T, open Opener) {
	s := open(t)
	ctx := t.Context()
	p := ns(t)
	session := p + "SESSION#s1"
	open1 := p + "OPEN#ACTION"

	// Items of one session spread over three executions; the index orders
	// them by GSI1SK across partitions.
	type row struct {
		pk, sk, g1sk, g2sk string
	}
	rows := []row{
		{p + "EXEC#e2", "ACTION#b", "ACTION#2031-01-02#b", "2031-01-02#b"},
		{p + "EXEC#e1", "ACTION#a", "ACTION#2031-01-01#a", "2031-01-01#a"},
		{p + "EXEC#e3", "ACTION#c", "ACTION#2031-01-03#c", ""},
		{p + "EXEC#e1", "APPROVAL#a", "APPROVAL#2031-01-01#a", ""},
		{p + "EXEC#e3", "ACTION#d", "ACTION#2031-01-04#d", "2031-01-04#d"},
	}
	for _, r := range rows {
		it := store.Item{PK: r.pk, SK: r.sk, Version: 1, GSI1PK: session, GSI1SK: r.g1sk, Body: []byte(r.g1sk)}
		if r.g2sk != "" {
			it.GSI2PK, it.GSI2SK = open1, r.g2sk
		}
		mustNil(t, s.PutOnce(ctx, it), "put")
	}
	mustNil(t, s.PutOnce(ctx, store.Item{PK: p + "EXEC#e9", SK: "ACTION#z", Version: 1,
		GSI1PK: p + "SESSION#other", GSI1SK: "ACTION#2031-01-01#z"}), "put other session")
	g1 := func(page store.Page) []string {
		out := make([]string, len(page.Items))
		for i, it := range page.Items {
			out[i] = it.GSI1SK
		}
		return out
	}

	cases := []struct {
		name     string
		index    store.Index
		pk       string
		opts     store.QueryOptions
		want     []string // GSI1SK of the items, in order
		wantNext string
	}{
		{name: "session index in index order", index: store.IndexSession, pk: session,
			want: []string{"ACTION#2031-01-01#a", "ACTION#2031-01-02#b", "ACTION#2031-01-03#c", "ACTION#2031-01-04#d", "APPROVAL#2031-01-01#a"}},
		{name: "session index with prefix, descending", index: store.IndexSession, pk: session,
			opts: store.QueryOptions{SKPrefix: "ACTION#", Descending: true},
			want: []string{"ACTION#2031-01-04#d", "ACTION#2031-01-03#c", "ACTION#2031-01-02#b", "ACTION#2031-01-01#a"}},
		{name: "session index page with Next", index: store.IndexSession, pk: session,
			opts: store.QueryOptions{SKPrefix: "ACTION#", Limit: 2},
			want: []string{"ACTION#2031-01-01#a", "ACTION#2031-01-02#b"}, wantNext: "ACTION#2031-01-02#b"},
		{name: "session index after, prefix ends the page", index: store.IndexSession, pk: session,
			opts: store.QueryOptions{SKPrefix: "ACTION#", After: "ACTION#2031-01-02#b"},
			want: []string{"ACTION#2031-01-03#c", "ACTION#2031-01-04#d"}},
		{name: "session index after, limit reaching the end of the prefix", index: store.IndexSession, pk: session,
			opts: store.QueryOptions{SKPrefix: "ACTION#", After: "ACTION#2031-01-02#b", Limit: 2},
			want: []string{"ACTION#2031-01-03#c", "ACTION#2031-01-04#d"}},
		{name: "session index descending after", index: store.IndexSession, pk: session,
			opts: store.QueryOptions{Descending: true, After: "ACTION#2031-01-02#b"},
			want: []string{"ACTION#2031-01-01#a"}},
		{name: "session index after below the prefix", index: store.IndexSession, pk: session,
			opts: store.QueryOptions{SKPrefix: "APPROVAL#", After: "ACTION#"},
			want: []string{"APPROVAL#2031-01-01#a"}},
		{name: "open index holds only items with GSI2 keys", index: store.IndexOpen, pk: open1,
			want: []string{"ACTION#2031-01-01#a", "ACTION#2031-01-02#b", "ACTION#2031-01-04#d"}},
		{name: "open index page", index: store.IndexOpen, pk: open1, opts: store.QueryOptions{Limit: 1, After: "2031-01-01#a"},
			want: []string{"ACTION#2031-01-02#b"}, wantNext: "2031-01-02#b"},
		{name: "unknown index partition is empty", index: store.IndexOpen, pk: p + "OPEN#NOTHING", want: nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			eventually(t, func() error {
				page, err := s.QueryIndex(ctx, tc.index, tc.pk, tc.opts)
				mustNil(t, err, "query index")
				if got := g1(page); !slices.Equal(got, tc.want) {
					return fmt.Errorf("items %v, want %v", got, tc.want)
				}
				if page.Next != tc.wantNext {
					return fmt.Errorf("page.Next %q, want %q", page.Next, tc.wantNext)
				}
				for _, it := range page.Items {
					if string(it.Body) != it.GSI1SK || it.Version != 1 {
						return fmt.Errorf("index returned a partial item: %+v", it)
					}
				}
				return nil
			})
		})
	}

	t.Run("clearing GSI2PK removes the item from the open index", func(t *testing.T) {
		closed := store.Item{PK: p + "EXEC#e2", SK: "ACTION#b", Version: 2, GSI1PK: session,
			GSI1SK: "ACTION#2031-01-02#b", Body: []byte("ACTION#2031-01-02#b")}
		mustNil(t, s.CompareAndSwap(ctx, closed, 1, 0), "close the action")
		openIs := func(want ...string) func() error {
			return func() error {
				// A sort-key bound as well as the partition: the sweeper pages
				// this way, and a removed item must not linger in a range scan.
				page, err := s.QueryIndex(ctx, store.IndexOpen, open1, store.QueryOptions{After: "2031-01-01"})
				mustNil(t, err, "query open index")
				if got := g1(page); !slices.Equal(got, want) {
					return fmt.Errorf("open index %v, want %v", got, want)
				}
				return nil
			}
		}
		eventually(t, openIs("ACTION#2031-01-01#a", "ACTION#2031-01-04#d"))
		reopened := closed
		reopened.Version, reopened.GSI2PK, reopened.GSI2SK = 3, open1, "2031-01-05#b"
		mustNil(t, s.CompareAndSwap(ctx, reopened, 2, 0), "reopen the action")
		eventually(t, openIs("ACTION#2031-01-01#a", "ACTION#2031-01-04#d", "ACTION#2031-01-02#b"))
	})
}
