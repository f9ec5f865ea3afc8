package httpapi

import (
	"crypto/sha256"
	"embed"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"regexp"
	"strings"
)

// DocsPath is where the API reference page is served.
const DocsPath = "/docs"

// DocsTarget is the make target that renders the page (apidocs/README.md).
const DocsTarget = "make api-docs"

// apiDocs holds the API reference page, apidocs/index.html, when `make
// api-docs` rendered it before the build; the checked-in README.md keeps
// the directory embeddable (and the package compilable) without it.
//
//go:embed apidocs
var apiDocs embed.FS

// docsPage is the reference page with the Content-Security-Policy that
// lets exactly its own inline scripts run.
type docsPage struct {
	html []byte
	csp  string
	// missing says why there is no page (html is nil then).
	missing string
}

// inlineScript is a <script> element's text: the browser ends it at the
// first "</script", as this pattern does.
var inlineScript = regexp.MustCompile(`(?is)<script[^>]*>(.*?)</script`)

// loadDocs reads index.html from fsys. A missing page is not an error:
// the API serves without it and /docs says how to build it.
func loadDocs(fsys fs.FS) (docsPage, error) {
	html, err := fs.ReadFile(fsys, "index.html")
	if errors.Is(err, fs.ErrNotExist) {
		return docsPage{missing: "The API reference page was not built into this binary: run `" + DocsTarget +
			"` (make run, make test and make build run it first), then build again. The page is rendered from api/openapi.yaml.\n"}, nil
	}
	if err != nil {
		return docsPage{}, fmt.Errorf("read the API reference page: %w", err)
	}
	// The page is self-contained (Redoc inline, no CDN): it may run its own
	// inline scripts and styles and connect to nothing but this origin.
	// Hashes rather than 'unsafe-inline', as the page shares its origin
	// with the Activity UI and its token.
	var hashes []string
	for _, m := range inlineScript.FindAllSubmatch(html, -1) {
		sum := sha256.Sum256(m[1])
		hashes = append(hashes, "'sha256-"+base64.StdEncoding.EncodeToString(sum[:])+"'")
	}
	csp := "default-src 'none'; script-src " + strings.Join(hashes, " ") +
		"; style-src 'self' 'unsafe-inline'; img-src 'self' data:; font-src 'self' data:; connect-src 'self'; worker-src 'self' blob:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
	return docsPage{html: html, csp: csp}, nil
}

// docsRoutes serves the page at /docs, public like the UI (it is the
// spec, rendered; it calls nothing).
func (h *api) docsRoutes() {
	h.mux.HandleFunc("GET "+DocsPath, func(w http.ResponseWriter, r *http.Request) {
		hd := w.Header()
		hd.Set("X-Content-Type-Options", "nosniff")
		hd.Set("Referrer-Policy", "no-referrer")
		if h.docs.html == nil {
			hd.Set("Content-Type", "text/plain; charset=utf-8")
			w.WriteHeader(http.StatusServiceUnavailable)
			w.Write([]byte(h.docs.missing))
			return
		}
		hd.Set("Content-Type", "text/html; charset=utf-8")
		hd.Set("Content-Security-Policy", h.docs.csp)
		w.Write(h.docs.html)
	})
	h.mux.HandleFunc("GET "+DocsPath+"/{$}", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, DocsPath, http.StatusMovedPermanently)
	})
}
