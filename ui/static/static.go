// Package static holds the dashboard's CSS and its one small script,
// embedded in the binary: nothing is loaded from elsewhere.
package static

import (
	"embed"
	"net/http"
)

//go:embed style.css app.js
var files embed.FS

// Handler serves the files under /static/. They change only with the
// binary, so browsers may keep them for an hour.
func Handler() http.Handler {
	fs := http.StripPrefix("/static/", http.FileServerFS(files))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "public, max-age=3600")
		fs.ServeHTTP(w, r)
	})
}
