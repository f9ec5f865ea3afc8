package clientcmd_test

import (
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/openprogram/lifecycle/cmd/lifecycle/clientcmd"
)

// TestHelpNeverPrintsTheToken (issue 11, point 6): with LIFECYCLE_TOKEN
// set, no command's --help (nor a command that fails for want of a
// server) prints the token's value; the help names where the default
// comes from instead.
func TestHelpNeverPrintsTheToken(t *testing.T) {
	const secret = "eyJhbGciOiJIUzI1NiJ9.eyJzaWQiOiJzZXNfc2VjcmV0In0.c2VjcmV0LXNpZ25hdHVyZQ"
	t.Setenv("LIFECYCLE_TOKEN", secret)
	root := &cobra.Command{Use: "lifecycle", SilenceErrors: true}
	clientcmd.AddTo(root)
	names := []string{""}
	for _, c := range root.Commands() {
		names = append(names, c.Name())
	}
	for _, name := range names {
		t.Run("help "+name, func(t *testing.T) {
			args := []string{"--help"}
			if name != "" {
				args = []string{name, "--help"}
			}
			out, err := run(t, args...)
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(out, secret) || strings.Contains(out, secret[:20]) {
				t.Fatalf("help prints the token:\n%s", out)
			}
			if name != "" && name != "token" && !strings.Contains(out, "LIFECYCLE_TOKEN") {
				t.Fatalf("help does not say where the token comes from:\n%s", out)
			}
		})
	}
	// The token still comes from the environment, and an error names no token.
	out, err := run(t, "--api", "http://127.0.0.1:1", "show", "act_1")
	if err == nil {
		t.Fatal("show against a closed port succeeded")
	}
	if strings.Contains(out, secret) || strings.Contains(err.Error(), secret) {
		t.Fatalf("an error prints the token: %v\n%s", err, out)
	}
	if strings.Contains(err.Error(), "no token") {
		t.Fatalf("the token of the environment was not used: %v", err)
	}
}
