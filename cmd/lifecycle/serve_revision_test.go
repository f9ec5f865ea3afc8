package main

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"
)

// An unknown --revision-policy is refused before anything starts, with the
// flag named.
func TestServeRefusesAnUnknownRevisionPolicy(t *testing.T) {
	err := serve(context.Background(), serveOptions{addr: "127.0.0.1:0", stateDir: t.TempDir(), workspace: t.TempDir(), session: "ses_local",
		restartWindow: "-1", logLevel: "error", sweep: time.Minute, revisionPolicy: "newest"}, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "--revision-policy") || !strings.Contains(err.Error(), "newest") {
		t.Fatalf("serve with --revision-policy newest: %v", err)
	}
}
