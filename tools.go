//go:build tools

// Package tools pins the code generators in go.mod so `make generate` uses
// the same versions on every machine.
package tools

import (
	_ "entgo.io/contrib/entgql"
	_ "entgo.io/ent/cmd/ent"
	_ "github.com/99designs/gqlgen"
	_ "github.com/a-h/templ/cmd/templ"
)
