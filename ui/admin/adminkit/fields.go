package adminkit

import "github.com/levers9/levers9/ui/components"

// Required marks a field as needed.
func Required(f components.Field) components.Field {
	f.Required = true
	return f
}

// Number makes a field a required number of at least 0, in steps of step
// ("1" for whole numbers, "any" for decimals).
func Number(f components.Field, step string) components.Field {
	f.Type, f.Min, f.Step, f.Required = "number", "0", step, true
	return f
}

// Hint adds an explanation under a field.
func Hint(f components.Field, hint string) components.Field {
	f.Hint = hint
	return f
}

// Typed sets a field's input type (password, date, email).
func Typed(f components.Field, typ string) components.Field {
	f.Type = typ
	return f
}
