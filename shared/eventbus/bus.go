package eventbus

import (
	"context"
	"sync"

	"github.com/openprogram/lifecycle/shared/actionflow"
)

// Bus is an in-process publisher with subscriptions.
type Bus struct {
	mu   sync.Mutex
	subs map[*sub]struct{}
}

type sub struct {
	ch     chan actionflow.Event
	filter func(actionflow.Event) bool
}

var _ actionflow.Publisher = (*Bus)(nil)

// NewBus returns an empty bus.
func NewBus() *Bus { return &Bus{subs: map[*sub]struct{}{}} }

// Publish delivers ev to every matching subscriber without blocking.
func (b *Bus) Publish(ctx context.Context, ev actionflow.Event) error {
	b.Notify(ev)
	return nil
}

// Notify delivers ev to matching subscribers; a full subscriber misses it
// (it re-reads the durable log).
func (b *Bus) Notify(ev actionflow.Event) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for s := range b.subs {
		if s.filter != nil && !s.filter(ev) {
			continue
		}
		select {
		case s.ch <- ev:
		default:
		}
	}
}

// Subscribe returns a channel of events matching filter (nil: all) and a
// cancel function that must be called to release it.
func (b *Bus) Subscribe(filter func(actionflow.Event) bool) (<-chan actionflow.Event, func()) {
	s := &sub{ch: make(chan actionflow.Event, 64), filter: filter}
	b.mu.Lock()
	b.subs[s] = struct{}{}
	b.mu.Unlock()
	return s.ch, func() {
		b.mu.Lock()
		delete(b.subs, s)
		b.mu.Unlock()
	}
}
