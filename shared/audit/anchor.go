package audit

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/openprogram/lifecycle/shared/store"
)

// Head is a chain's head at the time it was anchored: what `lifecycle
// audit verify --anchor SEQ:HASH` checks a chain against.
type Head struct {
	Stream string    `json:"stream"`
	Seq    int64     `json:"seq"`
	Hash   string    `json:"hash"`
	At     time.Time `json:"at"`
}

// Manifest is one anchor: the heads of the sessions that were active or
// changed since the previous anchor, written where the table's writers
// cannot change it (an S3 bucket with Object Lock in compliance mode).
type Manifest struct {
	AnchoredAt time.Time `json:"anchored_at"`
	Heads      []Head    `json:"heads"`
}

// Sink keeps manifests out of the table's reach (package s3anchor: an
// Object Lock bucket). Latest is the last one put (ok false before the
// first); Put never replaces an earlier manifest.
type Sink interface {
	Latest(ctx context.Context) (m Manifest, ok bool, err error)
	Put(ctx context.Context, m Manifest) error
}

// Anchorer writes the heads of the chains that changed since the last
// anchor. It adds no write to the lifecycle: it reads, per run, the open
// executions (the sparse index Active names), the previous manifest, and
// the last entry of each of their sessions' chains.
//
// Which sessions it looks at: those with an execution open now, and those
// of the previous manifest (so the entries a session gets as its last
// execution ends are anchored on the next run). A session that changes
// while it has no open execution and was not in the previous manifest (a
// policy change, a refused request) is anchored with its next execution:
// a head covers every entry before it, so nothing is left uncovered for
// longer than that.
type Anchorer struct {
	Store store.Store
	Sink  Sink
	// Active is the open-work index partition of running executions
	// (actionflow's "OPEN#EXEC"); each item's GSI1PK is its session's
	// stream.
	Active string
	Now    func() time.Time
}

// Run anchors once: it puts a manifest of the active sessions' heads when
// at least one head moved since the previous manifest, and returns it
// (with no heads when nothing moved and nothing was put).
func (a *Anchorer) Run(ctx context.Context) (Manifest, error) {
	if a.Store == nil || a.Sink == nil || a.Active == "" {
		return Manifest{}, errors.New("anchor: Store, Sink and Active are required")
	}
	now := time.Now
	if a.Now != nil {
		now = a.Now
	}
	prev, _, err := a.Sink.Latest(ctx)
	if err != nil {
		return Manifest{}, fmt.Errorf("anchor: read the previous manifest: %w", err)
	}
	before := map[string]Head{}
	for _, h := range prev.Heads {
		before[h.Stream] = h
	}
	open := map[string]bool{}
	err = store.EachInIndex(ctx, a.Store, store.IndexOpen, a.Active, store.QueryOptions{}, func(it store.Item) error {
		if strings.HasPrefix(it.GSI1PK, "SESSION#") {
			open[it.GSI1PK] = true
		}
		return nil
	})
	if err != nil {
		return Manifest{}, fmt.Errorf("anchor: list open executions: %w", err)
	}
	streams := make([]string, 0, len(open)+len(before))
	for s := range open {
		streams = append(streams, s)
	}
	for s := range before {
		if !open[s] {
			streams = append(streams, s)
		}
	}
	slices.Sort(streams)
	out := Manifest{AnchoredAt: now().UTC()}
	moved := false
	for _, s := range streams {
		h, ok, err := a.head(ctx, s)
		if err != nil {
			return Manifest{}, err
		}
		if !ok {
			continue
		}
		old, seen := before[s]
		changed := !seen || old.Seq != h.Seq || old.Hash != h.Hash
		moved = moved || changed
		if changed || open[s] {
			out.Heads = append(out.Heads, h)
		}
	}
	if !moved {
		return Manifest{AnchoredAt: out.AnchoredAt}, nil
	}
	if err := a.Sink.Put(ctx, out); err != nil {
		return Manifest{}, fmt.Errorf("anchor: put the manifest: %w", err)
	}
	return out, nil
}

// head reads a stream's last chained entry (ok false: no entry, or none
// chained yet).
func (a *Anchorer) head(ctx context.Context, stream string) (Head, bool, error) {
	page, err := a.Store.Query(ctx, stream, store.QueryOptions{SKPrefix: store.LogSKPrefix, Descending: true, Limit: 1})
	if err != nil {
		return Head{}, false, fmt.Errorf("anchor: last entry of %s: %w", stream, err)
	}
	if len(page.Items) == 0 {
		return Head{}, false, nil
	}
	seq, err := store.ParseLogSK(page.Items[0].SK)
	if err != nil {
		return Head{}, false, fmt.Errorf("anchor: %w", err)
	}
	es, err := a.Store.ReadLog(ctx, stream, seq-1, 1)
	if err != nil {
		return Head{}, false, fmt.Errorf("anchor: read entry %d of %s: %w", seq, stream, err)
	}
	if len(es) == 0 || !es[0].Chained() {
		return Head{}, false, nil
	}
	return Head{Stream: stream, Seq: es[0].Seq, Hash: hex.EncodeToString(es[0].Hash()), At: es[0].At}, true, nil
}
