// Package ui is the server-rendered dashboard (templ). Handlers are thin:
// they call the same domain functions as GraphQL.
package ui

import (
	"net/http"

	"github.com/a-h/templ"

	"github.com/levers9/levers9/ui/home"
)

// Routes registers the dashboard's pages on mux.
func Routes(mux *http.ServeMux, version string) {
	mux.Handle("GET /{$}", templ.Handler(home.Page(version)))
}
