//go:build faultinject

package faults

import (
	"context"
	"sync"
)

// Enabled reports whether fault injection is compiled in.
const Enabled = true

var (
	mu    sync.Mutex
	armed = map[string]func(ctx context.Context) bool{}
)

// Arm makes At(point) return a *CrashError whenever when(ctx) is true (nil:
// always). It returns a function that disarms it.
func Arm(point string, when func(ctx context.Context) bool) (disarm func()) {
	mu.Lock()
	defer mu.Unlock()
	if when == nil {
		when = func(context.Context) bool { return true }
	}
	armed[point] = when
	return func() {
		mu.Lock()
		defer mu.Unlock()
		delete(armed, point)
	}
}

// Reset disarms every point.
func Reset() {
	mu.Lock()
	defer mu.Unlock()
	armed = map[string]func(ctx context.Context) bool{}
}

// At returns a *CrashError if the point is armed for this call.
func At(ctx context.Context, point string) error {
	maybeKill(point)
	mu.Lock()
	when := armed[point]
	mu.Unlock()
	if when != nil && when(ctx) {
		return &CrashError{Point: point}
	}
	return nil
}
