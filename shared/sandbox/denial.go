package sandbox

import (
	"fmt"
	"strings"
)

// Denial is what a failed sandboxed command's output shows the sandbox
// blocked.
type Denial struct {
	// Kind is "write" (a write outside the writable places) or "network".
	Kind string
	// Evidence is the output line that shows it.
	Evidence string
}

// networkMarkers are the messages of a connection or name lookup that
// the sandbox's empty network namespace makes fail: no route (anything
// but loopback), no resolver reachable (glibc, curl, Go, Python), and a
// refused connection (the namespace's own loopback has no listeners but
// the command's own).
var networkMarkers = []string{
	"Network is unreachable",
	"Temporary failure in name resolution",
	"Could not resolve host",
	"Name or service not known",
	"No address associated with hostname",
	"server misbehaving",
	"Connection refused",
	"Couldn't connect to server",
	"Failed to connect to",
	"unable to resolve host",
	"getaddrinfo",
}

// writeMarker is EROFS's message: outside the workspace, the temp dir and
// writable extras everything is a read-only bind.
const writeMarker = "Read-only file system"

// Detect reads the output of a command that failed inside the sandbox of
// p and says whether it shows the sandbox blocked something. It is a
// heuristic over what the sandbox can know, and deliberately narrow:
//
//   - a write outside the view fails with EROFS ("Read-only file system"),
//     which outside the sandbox almost never happens;
//   - with the network closed, an unreachable network, a failed name
//     lookup or a refused connection is the sandbox's empty network
//     namespace (with the network open they are the network's own, and
//     not reported as a denial);
//   - a hidden path looks empty (an empty directory or file), the same as
//     a path that holds nothing: it is not detectable, by design ("not
//     visible at all"), so its failures stay ordinary failures.
//
// Only a command that failed is judged (the caller checks the exit status).
func Detect(p Profile, output string) (Denial, bool) {
	if p.Mode != ModeBwrap {
		return Denial{}, false
	}
	for _, line := range strings.Split(output, "\n") {
		if strings.Contains(line, writeMarker) {
			return Denial{Kind: "write", Evidence: strings.TrimSpace(line)}, true
		}
	}
	if p.Network {
		return Denial{}, false
	}
	for _, line := range strings.Split(output, "\n") {
		for _, m := range networkMarkers {
			if strings.Contains(line, m) {
				return Denial{Kind: "network", Evidence: strings.TrimSpace(line)}, true
			}
		}
	}
	return Denial{}, false
}

// Explain is the model-facing error of a sandbox denial: what was blocked
// and how to ask for more.
func (d Denial) Explain() string {
	switch d.Kind {
	case "network":
		return fmt.Sprintf("sandbox_denied: the command ran in a sandbox without network access, and a connection or name lookup failed (%s). "+
			"If it needs the network, submit the same call again with \"network\": true in its arguments; that relaxation needs approval unless a rule allows it.", d.Evidence)
	default:
		return fmt.Sprintf("sandbox_denied: the command ran in a sandbox where only the workspace and a private /tmp are writable, and a write elsewhere was blocked (%s). "+
			"Write inside the workspace, or submit the same call again with \"dangerouslyDisableSandbox\": true in its arguments to run it unconfined; that needs approval.", d.Evidence)
	}
}
