package revision

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/openprogram/lifecycle/shared/store"
)

// Published is a revision this deployment ran, with the state machine
// version that runs it.
type Published struct {
	Revision    Revision  `json:"revision"`
	VersionARN  string    `json:"version_arn"`
	PublishedAt time.Time `json:"published_at"`
}

// Store layout (see doc.go and shared/store/SCHEMA.md).
const (
	registryPK  = "REVISIONS"
	revSKPrefix = "REV#"
	liveSK      = "LIVE"
)

// Registry is the durable list of published revisions and the live one.
type Registry struct {
	st store.Store
}

// NewRegistry returns the registry kept in st.
func NewRegistry(st store.Store) *Registry { return &Registry{st: st} }

type liveBody struct {
	ID string `json:"id"`
}

// Put records a published revision. Putting the same revision again is
// accepted when it names the same version ARN (the first PublishedAt
// stays); another version ARN for a known revision is an error, since a
// revision runs on one version.
func (r *Registry) Put(ctx context.Context, p Published) error {
	if err := p.Revision.Validate(); err != nil {
		return fmt.Errorf("put revision: %w", err)
	}
	if p.VersionARN == "" {
		return fmt.Errorf("put revision %s: the version ARN is empty", p.Revision.ID)
	}
	if p.PublishedAt.IsZero() {
		return fmt.Errorf("put revision %s: published_at is zero", p.Revision.ID)
	}
	p.PublishedAt = p.PublishedAt.UTC()
	body, err := json.Marshal(p)
	if err != nil {
		return fmt.Errorf("put revision %s: %w", p.Revision.ID, err)
	}
	err = r.st.PutOnce(ctx, store.Item{PK: registryPK, SK: revSKPrefix + p.Revision.ID, Version: 1, Body: body})
	var ce *store.ConflictError
	if errors.As(err, &ce) {
		var old Published
		if derr := json.Unmarshal(ce.Existing.Body, &old); derr != nil {
			return fmt.Errorf("put revision %s: decode the stored one: %w", p.Revision.ID, derr)
		}
		if old.VersionARN != p.VersionARN {
			return fmt.Errorf("put revision %s: already published as %s, not %s", p.Revision.ID, old.VersionARN, p.VersionARN)
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("put revision %s: %w", p.Revision.ID, err)
	}
	return nil
}

// Get returns a published revision; an unknown id is an error wrapping
// store.ErrNotFound.
func (r *Registry) Get(ctx context.Context, id string) (Published, error) {
	it, err := r.st.Get(ctx, store.Key{PK: registryPK, SK: revSKPrefix + id})
	if err != nil {
		return Published{}, fmt.Errorf("get revision %s: %w", id, err)
	}
	return decodePublished(it)
}

// Live returns the revision the `live` alias points at; before the first
// SetLive it is an error wrapping store.ErrNotFound.
func (r *Registry) Live(ctx context.Context) (Published, error) {
	it, err := r.st.Get(ctx, store.Key{PK: registryPK, SK: liveSK})
	if err != nil {
		return Published{}, fmt.Errorf("get the live revision: %w", err)
	}
	var lb liveBody
	if err := json.Unmarshal(it.Body, &lb); err != nil {
		return Published{}, fmt.Errorf("decode the live revision pointer: %w", err)
	}
	return r.Get(ctx, lb.ID)
}

// SetLive makes a published revision the live one. The revision must have
// been Put; setting the live one again changes nothing.
func (r *Registry) SetLive(ctx context.Context, id string) error {
	if _, err := r.Get(ctx, id); err != nil {
		return fmt.Errorf("set the live revision: %w", err)
	}
	body, err := json.Marshal(liveBody{ID: id})
	if err != nil {
		return err
	}
	key := store.Key{PK: registryPK, SK: liveSK}
	for attempt := 0; attempt < 5; attempt++ {
		var version int64
		it, err := r.st.Get(ctx, key)
		switch {
		case errors.Is(err, store.ErrNotFound):
		case err != nil:
			return fmt.Errorf("set the live revision to %s: %w", id, err)
		default:
			var lb liveBody
			if json.Unmarshal(it.Body, &lb) == nil && lb.ID == id {
				return nil
			}
			version = it.Version
		}
		err = r.st.CompareAndSwap(ctx, store.Item{PK: registryPK, SK: liveSK, Version: version + 1, Body: body}, version, 0)
		if err == nil {
			return nil
		}
		if !errors.Is(err, store.ErrConflict) {
			return fmt.Errorf("set the live revision to %s: %w", id, err)
		}
	}
	return fmt.Errorf("set the live revision to %s: the pointer kept changing under concurrent writers", id)
}

// List returns every published revision, oldest first.
func (r *Registry) List(ctx context.Context) ([]Published, error) {
	var out []Published
	err := store.Each(ctx, r.st, registryPK, store.QueryOptions{SKPrefix: revSKPrefix}, func(it store.Item) error {
		p, err := decodePublished(it)
		if err != nil {
			return err
		}
		out = append(out, p)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list revisions: %w", err)
	}
	sortByPublished(out)
	return out, nil
}

func decodePublished(it store.Item) (Published, error) {
	var p Published
	if err := json.Unmarshal(it.Body, &p); err != nil {
		return Published{}, fmt.Errorf("decode revision %s: %w", it.Key(), err)
	}
	return p, nil
}

func sortByPublished(ps []Published) {
	slices.SortStableFunc(ps, func(a, b Published) int {
		if c := a.PublishedAt.Compare(b.PublishedAt); c != 0 {
			return c
		}
		return strings.Compare(a.Revision.ID, b.Revision.ID)
	})
}
