//go:build !faultinject

package faults

import "context"

// Enabled reports whether fault injection is compiled in.
const Enabled = false

// At is a no-op in production builds.
func At(ctx context.Context, point string) error { return nil }
