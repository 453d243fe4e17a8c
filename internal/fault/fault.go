// Package fault gives domain errors a code that every front door maps the
// same way: GraphQL extensions.code, HTTP status, CLI exit code.
package fault

import (
	"errors"
	"fmt"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/ent/privacy"
	"github.com/levers9/levers9/internal/jobspec"
)

// Code classifies an error for clients.
type Code string

// The codes clients can rely on.
const (
	Unauthenticated    Code = "UNAUTHENTICATED"
	Forbidden          Code = "FORBIDDEN"
	NotFound           Code = "NOT_FOUND"
	BadUserInput       Code = "BAD_USER_INPUT"
	InsufficientTokens Code = "INSUFFICIENT_TOKENS"
	RateLimited        Code = "RATE_LIMITED"
	// Unavailable: a part the request needs (a node) is not reachable now;
	// trying again later may work.
	Unavailable Code = "UNAVAILABLE"
	Internal    Code = "INTERNAL"
)

// Error is an error with a code, safe to show to the user.
type Error struct {
	Code    Code
	Message string
	// Field names the input field at fault, when there is one.
	Field string
	// Details are extra facts for clients (balance, required tokens).
	Details map[string]any
}

func (e *Error) Error() string {
	if e.Field != "" {
		return e.Field + ": " + e.Message
	}
	return e.Message
}

// New returns an error with code and message.
func New(code Code, format string, a ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, a...)}
}

// Invalid returns a BAD_USER_INPUT error on field.
func Invalid(field, format string, a ...any) *Error {
	return &Error{Code: BadUserInput, Field: field, Message: fmt.Sprintf(format, a...)}
}

// Missing returns a NOT_FOUND error for what ("queue \"gpu\"").
func Missing(what string) *Error {
	return &Error{Code: NotFound, Message: what + " not found"}
}

// Classify returns the user-facing errors in err with their codes, or nil
// when err carries nothing safe to show (an internal error).
func Classify(err error) []*Error {
	if err == nil {
		return nil
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var out []*Error
		for _, e := range j.Unwrap() {
			c := Classify(e)
			if c == nil {
				return nil
			}
			out = append(out, c...)
		}
		return out
	}
	var (
		fe *Error
		se *jobspec.FieldError
		ve *ent.ValidationError
		ce *ent.ConstraintError
	)
	switch {
	case errors.As(err, &fe):
		return []*Error{fe}
	case errors.As(err, &se):
		return []*Error{{Code: BadUserInput, Field: se.Field, Message: se.Message}}
	case errors.As(err, &ve):
		return []*Error{{Code: BadUserInput, Field: ve.Name, Message: "invalid value for " + ve.Name}}
	case errors.As(err, &ce):
		// Unique indexes are the only constraints users can hit on purpose.
		return []*Error{{Code: BadUserInput, Message: "an object with this name already exists, or refers to one that does not"}}
	case ent.IsNotFound(err):
		return []*Error{{Code: NotFound, Message: "not found"}}
	case errors.Is(err, privacy.Deny):
		return []*Error{{Code: Forbidden, Message: "forbidden"}}
	}
	return nil
}
