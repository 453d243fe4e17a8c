// Package layering checks the import rules of the layering (DESIGN.md §3,
// README "Architecture"): its test loads every package of the module, with
// its tests, and fails on an import that points the wrong way. The rules
// are one table, in layering_test.go; `make check` runs it.
package layering
