//go:build faultinject

package faults

import (
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// KillEnv names the environment variable that makes a faultinject build
// kill its own process at named points, for black-box chaos runs of a real
// `lifecycle serve` (tests/chaos): "after_receipt=0.01,after_executor=0.02"
// SIGKILLs the process at each call of At(point) with that probability. A
// SIGKILL is what a crash looks like from outside: nothing after the point
// runs, no deferred function, no orderly close.
const KillEnv = "LIFECYCLE_FAULT_KILL"

var killAt = parseKill(os.Getenv(KillEnv))

// parseKill reads KillEnv. A malformed value stops the process at start-up:
// a chaos run that silently injects nothing would pass for the wrong reason.
func parseKill(spec string) map[string]float64 {
	out := map[string]float64{}
	if strings.TrimSpace(spec) == "" {
		return out
	}
	known := map[string]bool{AfterLease: true}
	for _, p := range Points {
		known[p] = true
	}
	for _, part := range strings.Split(spec, ",") {
		name, prob, ok := strings.Cut(strings.TrimSpace(part), "=")
		p, err := strconv.ParseFloat(prob, 64)
		if !ok || err != nil || p < 0 || p > 1 || !known[name] {
			panic(fmt.Sprintf("%s: %q is not point=probability with a known point (%s) and 0 <= probability <= 1",
				KillEnv, part, strings.Join(append([]string{AfterLease}, Points...), ", ")))
		}
		out[name] = p
	}
	return out
}

// maybeKill SIGKILLs this process at point with its configured probability.
func maybeKill(point string) {
	if p := killAt[point]; p > 0 && rand.Float64() < p {
		_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {} // the signal is on its way; never run what comes after the point
	}
}
