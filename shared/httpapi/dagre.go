package httpapi

import (
	"net/http"
	"os"
	"path/filepath"
)

// DagreVersion is the pinned version of @dagrejs/dagre, the graph layout
// library of the UI's console view. It is not committed: `make ui-assets`
// installs it from npm under .tools/ (DagrePath), and the API serves that
// file at /ui/vendor/dagre.min.js. A build without it still compiles and
// serves everything else; the console view then lists the path taken
// instead of drawing the graph.
const DagreVersion = "3.1.3"

// DagrePath is where `make ui-assets` installs dagre, relative to the
// repository root.
var DagrePath = filepath.Join(".tools", "dagre-"+DagreVersion, "node_modules", "@dagrejs", "dagre", "dist", "dagre.min.js")

// FindDagre finds the layout library: $LIFECYCLE_UI_DAGRE (a file), else
// DagrePath in the working directory or a directory above it (a checkout
// running `lifecycle serve` or its tests). "" when it is nowhere.
func FindDagre() string {
	if p := os.Getenv("LIFECYCLE_UI_DAGRE"); p != "" {
		return p
	}
	dir, err := os.Getwd()
	if err != nil {
		return ""
	}
	for {
		p := filepath.Join(dir, DagrePath)
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() {
			return p
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return ""
		}
		dir = parent
	}
}

// serveDagre serves the layout library, or 404 when it is not installed
// (the page then says how to install it).
func (h *api) serveDagre(w http.ResponseWriter, r *http.Request) {
	if h.cfg.Dagre == "" {
		http.Error(w, "the graph layout library is not installed: run `make ui-assets` ("+DagrePath+")", http.StatusNotFound)
		return
	}
	w.Header().Set("Content-Type", "text/javascript; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Cache-Control", "no-cache")
	http.ServeFile(w, r, h.cfg.Dagre)
}
