package components

// Field is one form field as a component renders it.
type Field struct {
	ID, Name, Label string
	Type            string // input type; text when empty
	Value           string
	Required        bool
	Min, Step       string
	Placeholder     string
	Hint            string
	Errors          []string
}

func (f Field) typ() string {
	if f.Type == "" {
		return "text"
	}
	return f.Type
}

// Option is one choice of a select.
type Option struct{ Value, Label string }

// Page is a pager's state: links to neighbouring pages (empty at the ends).
type Page struct {
	Prev, Next string
	Summary    string
}
