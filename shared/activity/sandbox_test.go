package activity

import (
	"testing"

	"github.com/openprogram/lifecycle/shared/sandbox"
)

func TestSandboxBrief(t *testing.T) {
	cases := []struct {
		name string
		p    *sandbox.Profile
		want string
	}{
		{"not a host tool", nil, ""},
		{"default", &sandbox.Profile{Mode: sandbox.ModeBwrap}, "bwrap"},
		{"network", &sandbox.Profile{Mode: sandbox.ModeBwrap, Network: true}, "bwrap+network"},
		{"extra paths stay brief", &sandbox.Profile{Mode: sandbox.ModeBwrap, Writable: []string{"/var/cache"}}, "bwrap"},
		{"off", &sandbox.Profile{Mode: sandbox.ModeOff, Network: true}, "off"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := sandboxBrief(tc.p); got != tc.want {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
		})
	}
}
