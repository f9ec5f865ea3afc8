package httpapi_test

import (
	"crypto/sha256"
	"encoding/base64"
	"io"
	"net/http"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/openprogram/lifecycle/shared/httpapi"
)

// TestDocsRoute: /docs serves the page it was built with, whose own inline
// scripts (and no others) the Content-Security-Policy lets run; a binary
// built before `make api-docs` answers 503 naming the target; the Lambda
// (NoUI) serves the page too.
func TestDocsRoute(t *testing.T) {
	const script = `window.rendered = "spec"`
	page := "<!doctype html><title>ref</title><script>" + script + "</script><p>every operation</p>"
	sum := sha256.Sum256([]byte(script))
	hash := "'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'"
	cases := []struct {
		name       string
		docs       fstest.MapFS
		noUI       bool
		path       string
		status     int
		body       string // the body contains it
		csp        string // the Content-Security-Policy contains it
		location   string
		contentTyp string
	}{
		{name: "the built page", docs: fstest.MapFS{"index.html": {Data: []byte(page)}}, path: "/docs",
			status: 200, body: "every operation", csp: "script-src " + hash + ";", contentTyp: "text/html; charset=utf-8"},
		{name: "the Lambda serves it too", docs: fstest.MapFS{"index.html": {Data: []byte(page)}}, noUI: true, path: "/docs",
			status: 200, body: "every operation", csp: "connect-src 'self'", contentTyp: "text/html; charset=utf-8"},
		{name: "a trailing slash redirects", docs: fstest.MapFS{"index.html": {Data: []byte(page)}}, path: "/docs/",
			status: 301, location: "/docs"},
		{name: "not built: 503 naming the make target", docs: fstest.MapFS{"README.md": {Data: []byte("x")}}, path: "/docs",
			status: 503, body: "run `" + httpapi.DocsTarget + "`", contentTyp: "text/plain; charset=utf-8"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := newStack(t, func(cfg *httpapi.Config) { cfg.Docs, cfg.NoUI = c.docs, c.noUI })
			cl := *s.client
			cl.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
			res, err := cl.Get(s.url + c.path)
			if err != nil {
				t.Fatal(err)
			}
			defer res.Body.Close()
			body, _ := io.ReadAll(res.Body)
			if res.StatusCode != c.status {
				t.Fatalf("status %d, want %d: %s", res.StatusCode, c.status, body)
			}
			if !strings.Contains(string(body), c.body) {
				t.Errorf("body %q does not contain %q", body, c.body)
			}
			if got := res.Header.Get("Content-Security-Policy"); !strings.Contains(got, c.csp) {
				t.Errorf("Content-Security-Policy %q does not contain %q", got, c.csp)
			}
			if c.location != "" && res.Header.Get("Location") != c.location {
				t.Errorf("Location %q, want %q", res.Header.Get("Location"), c.location)
			}
			if c.contentTyp != "" && res.Header.Get("Content-Type") != c.contentTyp {
				t.Errorf("Content-Type %q, want %q", res.Header.Get("Content-Type"), c.contentTyp)
			}
		})
	}
}
