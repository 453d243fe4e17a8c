package ui

//go:generate go run github.com/a-h/templ/cmd/templ generate -path .
