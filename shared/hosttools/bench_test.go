package hosttools_test

import (
	"context"
	"testing"

	"github.com/openprogram/lifecycle/shared/hosttools"
	"github.com/openprogram/lifecycle/shared/sandbox"
)

// BenchmarkHostBashSandbox is the sandbox's added latency per host call:
// the same Bash call (`true`) unconfined (sandbox off) and inside
// bubblewrap's default profile. The difference of the two ns/op is the
// cost (`make bench`).
func BenchmarkHostBashSandbox(b *testing.B) {
	if _, err := sandbox.Find(); err != nil {
		b.Skip(err)
	}
	r, err := hosttools.NewRunner(b.TempDir(), "")
	if err != nil {
		b.Fatal(err)
	}
	args := []byte(`{"command":"true"}`)
	for _, p := range []sandbox.Profile{{Mode: sandbox.ModeOff}, sandbox.Default()} {
		b.Run(p.Mode, func(b *testing.B) {
			for range b.N {
				res, err := r.RunIn(context.Background(), p, "Bash", args)
				if err != nil || res.Outcome != "succeeded" {
					b.Fatalf("%+v %v", res, err)
				}
			}
		})
	}
}
