package httpapi

import (
	"embed"
	"net/http"
)

// uiFiles is the browser UI, served at /ui/ (and / redirects there). The
// UI authenticates with a token like any client; serving it grants nothing.
//
//go:embed ui
var uiFiles embed.FS

func (h *api) uiRoutes() {
	files := http.StripPrefix("/ui/", http.FileServerFS(h.cfg.UI))
	h.mux.Handle("GET /ui/", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hd := w.Header()
		hd.Set("Content-Security-Policy", "default-src 'self'; connect-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; frame-ancestors 'none'")
		hd.Set("X-Content-Type-Options", "nosniff")
		hd.Set("Referrer-Policy", "no-referrer")
		files.ServeHTTP(w, r)
	}))
	h.mux.HandleFunc("GET /ui/vendor/dagre.min.js", h.serveDagre)
	h.mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/ui/", http.StatusFound)
	})
}
