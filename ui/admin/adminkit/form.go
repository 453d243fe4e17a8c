// Package adminkit holds what the tenant admin pages share on top of the
// dashboard's components: forms kept as typed with their errors, domain
// faults put next to the fields they name, checkbox groups, secrets shown
// once and the admin section's navigation.
package adminkit

import (
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/levers9/levers9/internal/fault"
	"github.com/levers9/levers9/ui/components"
)

// Form is a form as the user typed it, with its problems, so a refused
// post shows it again unchanged with each message next to its field.
type Form struct {
	// Prefix makes element ids unique when a page has several forms.
	Prefix string
	Values url.Values
	Errors map[string][]string
	// Summary are problems that belong to no field of the form.
	Summary []string
	CSRF    string
}

// NewForm returns an empty form with element ids starting with prefix.
func NewForm(prefix, csrf string, values url.Values) *Form {
	if values == nil {
		values = url.Values{}
	}
	return &Form{Prefix: prefix, Values: values, Errors: map[string][]string{}, CSRF: csrf}
}

// Posted reads r's urlencoded form (the router checked its CSRF token).
func Posted(r *http.Request, prefix, csrf string) (*Form, error) {
	if err := r.ParseForm(); err != nil {
		return nil, fault.Invalid("form", "could not read the form")
	}
	return NewForm(prefix, csrf, r.PostForm), nil
}

// Get is the trimmed value of field name.
func (f *Form) Get(name string) string { return strings.TrimSpace(f.Values.Get(name)) }

// All are the non-empty values of a multi-valued field (checkboxes).
func (f *Form) All(name string) []string {
	var out []string
	for _, v := range f.Values[name] {
		if v = strings.TrimSpace(v); v != "" && !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	return out
}

// Has reports whether checkbox name is ticked.
func (f *Form) Has(name string) bool { return f.Values.Get(name) != "" }

// Add records a problem of field name ("" for the summary).
func (f *Form) Add(name, msg string) {
	if name == "" {
		f.Summary = append(f.Summary, msg)
		return
	}
	f.Errors[name] = append(f.Errors[name], msg)
}

// Invalid reports whether the form has problems.
func (f *Form) Invalid() bool { return len(f.Errors) > 0 || len(f.Summary) > 0 }

// ID is the element id of field name.
func (f *Form) ID(name string) string { return f.Prefix + "-" + name }

// Field is field name as components render it.
func (f *Form) Field(name, label string) components.Field {
	return components.Field{ID: f.ID(name), Name: name, Label: label, Value: f.Values.Get(name), Errors: f.Errors[name]}
}

// Absorb puts the user-facing faults of err on the form: on the field they
// name when the form shows it (shown lists those, mapping domain field names
// to form field names), else on fallback (the field most likely at fault,
// e.g. "name" for a name already taken), else in the summary. It returns err
// unchanged when err is an internal error (nothing to show), else nil.
func (f *Form) Absorb(err error, fallback string, shown map[string]string) error {
	fs := fault.Classify(err)
	if len(fs) == 0 {
		return err
	}
	for _, fe := range fs {
		if fe.Code != fault.BadUserInput {
			return err // forbidden, not found: an error page, not a form message
		}
		name, ok := shown[fe.Field]
		if !ok {
			name = fallback
		}
		msg := fe.Message
		if h, ok := hints[fe.Field]; ok && strings.HasPrefix(msg, "invalid value for") {
			msg = h // ent's validators say only that the value is wrong
		}
		f.Add(name, msg)
	}
	return nil
}

// hints explain ent's field validation rules.
var hints = map[string]string{
	"name":        "use 1 to 63 letters, digits, '.', '_' or '-', starting and ending with a letter or digit",
	"description": "at most 1000 characters",
	"multiplier":  "must be a number above 0",
}

// Shown maps field names that are the same in the domain and the form.
func Shown(names ...string) map[string]string {
	m := make(map[string]string, len(names))
	for _, n := range names {
		m[n] = n
	}
	return m
}
