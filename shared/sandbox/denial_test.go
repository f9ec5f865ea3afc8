package sandbox_test

import (
	"strings"
	"testing"

	"github.com/openprogram/lifecycle/shared/sandbox"
)

func TestDetect(t *testing.T) {
	open := sandbox.Profile{Mode: sandbox.ModeBwrap, Network: true}
	tests := []struct {
		name     string
		profile  sandbox.Profile
		output   string
		wantKind string // empty: not a denial
	}{
		{"write outside the view", sandbox.Default(), "touch: cannot touch '/etc/x': Read-only file system\n", "write"},
		{"write outside the view with network open", open, "bash: /etc/x: Read-only file system", "write"},
		{"unreachable network", sandbox.Default(), "curl: (7) Failed to connect: Network is unreachable", "network"},
		{"resolver", sandbox.Default(), "curl: (6) Could not resolve host: example.com", "network"},
		{"refused on the sandbox's loopback", sandbox.Default(), "bash: connect: Connection refused", "network"},
		{"network failure with the network open is the network's", open, "curl: (6) Could not resolve host: example.com", ""},
		{"an ordinary failure", sandbox.Default(), "make: *** [test] Error 1", ""},
		{"a missing (maybe hidden) file is not detectable", sandbox.Default(), "cat: /root/.ssh/id_rsa: No such file or directory", ""},
		{"sandbox off never denies", sandbox.Profile{Mode: sandbox.ModeOff}, "Read-only file system", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d, ok := sandbox.Detect(tc.profile, tc.output)
			if ok != (tc.wantKind != "") || d.Kind != tc.wantKind {
				t.Fatalf("Detect = %+v, %v; want kind %q", d, ok, tc.wantKind)
			}
			if ok && !strings.Contains(d.Explain(), "sandbox_denied") {
				t.Fatalf("explanation %q does not say sandbox_denied", d.Explain())
			}
		})
	}
	d, _ := sandbox.Detect(sandbox.Default(), "Network is unreachable")
	if !strings.Contains(d.Explain(), `"network": true`) {
		t.Fatalf("network denial does not say how to ask for the network: %s", d.Explain())
	}
	d, _ = sandbox.Detect(sandbox.Default(), "Read-only file system")
	if !strings.Contains(d.Explain(), `"dangerouslyDisableSandbox": true`) {
		t.Fatalf("write denial does not say how to ask to leave the sandbox: %s", d.Explain())
	}
}
