package httpapi

import (
	"context"
	"time"

	"github.com/openprogram/lifecycle/shared/actionflow"
)

// waitFor runs check until it reports done, the wait d passes or ctx ends.
// It re-checks when an event matching wake is appended (Config.Wake) and
// at least every PollInterval, so it works with no bus at all (Lambda).
// The subscription is taken before the first check, so an event appended
// between the check and the wait is not missed.
func (h *api) waitFor(ctx context.Context, d time.Duration, wake func(actionflow.Event) bool, check func() (bool, error)) error {
	var events <-chan actionflow.Event
	if h.cfg.Wake != nil && d > 0 {
		ch, cancel := h.cfg.Wake.Subscribe(wake)
		defer cancel()
		events = ch
	}
	deadline := time.NewTimer(d)
	defer deadline.Stop()
	poll := time.NewTicker(h.cfg.PollInterval)
	defer poll.Stop()
	for {
		done, err := check()
		if err != nil || done || d <= 0 {
			return err
		}
		select {
		case <-ctx.Done():
			return nil // the caller left; the last answer is as good as any
		case <-deadline.C:
			return nil
		case <-events:
		case <-poll.C:
		}
	}
}
