package wire

import (
	"errors"
	"fmt"
	"strings"
)

// Errors returned by Encode and Decode; test with errors.Is.
var (
	ErrTooLarge    = errors.New("wire: message too large")
	ErrVersion     = errors.New("wire: unsupported protocol version")
	ErrUnknownType = errors.New("wire: unknown message type")
	ErrMalformed   = errors.New("wire: malformed message")
	ErrInvalid     = errors.New("wire: invalid message")
)

// FieldError is one invalid field, named by its path ("services[1].ports[0].port").
type FieldError struct {
	Field   string
	Message string
}

func (e FieldError) Error() string { return e.Field + ": " + e.Message }

// InvalidError lists the invalid fields of one message. errors.Is(err,
// ErrInvalid) holds for it.
type InvalidError struct {
	Kind   Kind
	Fields []FieldError
}

// maxListed keeps errors about hostile messages short.
const maxListed = 10

func (e *InvalidError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "wire: invalid %s message: ", e.Kind)
	for i, f := range e.Fields {
		if i == maxListed {
			fmt.Fprintf(&b, "; and %d more", len(e.Fields)-maxListed)
			break
		}
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(f.Error())
	}
	return b.String()
}

// Is makes errors.Is(err, ErrInvalid) true.
func (e *InvalidError) Is(target error) bool { return target == ErrInvalid }
