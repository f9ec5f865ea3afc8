package recovery

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/openprogram/lifecycle/shared/ids"
)

// Window is the restart window: how long after an interruption an
// execution may continue automatically. The zero value is the default,
// unlimited (-1), stored as a null deadline; Within(0) disables automatic
// continuation; a positive duration is measured from the orderly shutdown
// intent or the abandoned attempt's last durable activity, never from the
// next start-up.
type Window struct {
	d   time.Duration
	set bool
}

// Unlimited is the default window (-1).
func Unlimited() Window { return Window{} }

// Within is a finite window; Within(0) disables automatic continuation.
func Within(d time.Duration) Window {
	if d < 0 {
		return Unlimited()
	}
	return Window{d: d, set: true}
}

// ParseWindow reads "-1" (or ""), "0", or a Go duration ("2h").
func ParseWindow(s string) (Window, error) {
	switch strings.TrimSpace(s) {
	case "", "-1":
		return Unlimited(), nil
	case "0":
		return Within(0), nil
	}
	d, err := time.ParseDuration(strings.TrimSpace(s))
	if err != nil || d < 0 {
		return Window{}, fmt.Errorf("restart window %q: want -1 (unlimited), 0 (disabled) or a positive duration like 2h", s)
	}
	return Within(d), nil
}

func (w Window) String() string {
	if !w.set {
		return "-1"
	}
	if w.d == 0 {
		return "0"
	}
	return w.d.String()
}

// Seconds is the window as a policy's restart_window_seconds: -1
// unlimited, 0 disabled, else whole seconds.
func (w Window) Seconds() int64 {
	if !w.set {
		return -1
	}
	return int64(w.d / time.Second)
}

// Deadline is the deadline of an interruption at `at`: nil when unlimited.
func (w Window) Deadline(at time.Time) *time.Time {
	if !w.set {
		return nil
	}
	d := at.Add(w.d)
	return &d
}

// SecondsWindow is the window of a policy's restart_window_seconds: -1 (or
// less) unlimited, 0 disabled, > 0 seconds.
func SecondsWindow(seconds int64) Window {
	if seconds < 0 {
		return Unlimited()
	}
	return Within(time.Duration(seconds) * time.Second)
}

// windowOf is the restart window of an execution's session: its own when
// it set one, else the configured default.
func (s *Sweeper) windowOf(ctx context.Context, session ids.SessionID) (Window, error) {
	if s.cfg.Windows == nil || session == "" {
		return s.cfg.Window, nil
	}
	seconds, set, err := s.cfg.Windows.SessionRestartWindow(ctx, session)
	if err != nil {
		return Window{}, fmt.Errorf("restart window of session %s: %w", session, err)
	}
	if !set {
		return s.cfg.Window, nil
	}
	return SecondsWindow(seconds), nil
}
