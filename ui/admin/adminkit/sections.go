package adminkit

import (
	"slices"
	"strconv"
)

// Section is one area of the admin pages.
type Section struct{ Label, Href string }

// Sections are the admin areas in navigation order.
var Sections = []Section{
	{"Queues", "/admin/queues"},
	{"Groups", "/admin/groups"},
	{"Users", "/admin/users"},
	{"Projects", "/admin/projects"},
	{"Storages", "/admin/storages"},
	{"Settings", "/admin/settings"},
	{"API tokens", "/admin/tokens"},
	{"Audit log", "/admin/audit"},
}

func itoa(n int) string { return strconv.Itoa(n) }

func selected(f *Form, name, value string) bool { return slices.Contains(f.Values[name], value) }
