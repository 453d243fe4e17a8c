//go:build tools

// Package tools pins the code generators in go.mod so `make generate` uses
// the same versions on every machine.
package tools

import (
	_ "entgo.io/contrib/entgql"
	_ "entgo.io/ent/cmd/ent"
	_ "github.com/99designs/gqlgen"
	_ "github.com/a-h/templ/cmd/templ"

	// Operations (issue 19): pinned here until the code that uses them lands.
	_ "github.com/prometheus/client_golang/prometheus"
	_ "github.com/prometheus/common/expfmt"
)
