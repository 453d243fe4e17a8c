package wire

import (
	"fmt"
	"math"
	"strings"
	"time"
	"unicode/utf8"
)

var (
	// IDs become directory names on the node, so no '/' or dots.
	idPattern = newPattern(`^[A-Za-z0-9][A-Za-z0-9_-]*$`, 128)
	// GPU device IDs: indexes, UUIDs ("GPU-…") and MIG IDs ("MIG-…/1/0");
	// no commas, since they are joined into CUDA_VISIBLE_DEVICES.
	gpuDevice = newPattern(`^[A-Za-z0-9][A-Za-z0-9:/._-]*$`, 128)
)

// checker collects the field errors of one message.
type checker struct {
	kind   Kind
	fields []FieldError
}

func (c *checker) bad(field, format string, a ...any) {
	c.fields = append(c.fields, FieldError{Field: field, Message: fmt.Sprintf(format, a...)})
}

func (c *checker) err() error {
	if len(c.fields) == 0 {
		return nil
	}
	return &InvalidError{Kind: c.kind, Fields: c.fields}
}

func (c *checker) id(field, v string) {
	switch {
	case v == "":
		c.bad(field, "is required")
	case !idPattern.MatchString(v):
		c.bad(field, "%.40q is not a valid ID", v)
	}
}

func (c *checker) service(field, v string) {
	c.check(field, CheckServiceName(v))
}

// check records err, one of the Check functions' answers, against field.
func (c *checker) check(field string, err error) {
	if err != nil {
		c.fields = append(c.fields, FieldError{Field: field, Message: err.Error()})
	}
}

func (c *checker) time(field string, t time.Time) {
	if t.IsZero() {
		c.bad(field, "is required")
		return
	}
	// JSON can only carry four-digit years.
	if y := t.UTC().Year(); y < 1 || y > 9999 {
		c.bad(field, "year %d is out of range", y)
	}
}

func (c *checker) text(field, v string, max int) {
	if len(v) > max {
		c.bad(field, "is %d bytes, at most %d allowed", len(v), max)
	}
	if !utf8.ValidString(v) {
		c.bad(field, "is not valid UTF-8")
	}
}

func (c *checker) rangeInt(field string, v, lo, hi int64) {
	if v < lo || v > hi {
		c.bad(field, "is %d, must be between %d and %d", v, lo, hi)
	}
}

func (c *checker) nonNegFloat(field string, v float64) {
	if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
		c.bad(field, "must be a non-negative number")
	}
}

func (c *checker) running(field string, rs []RunningService) {
	for i, r := range rs {
		f := fmt.Sprintf("%s[%d]", field, i)
		c.id(f+".jobId", r.JobID)
		c.service(f+".service", r.Service)
		c.rangeInt(f+".attempt", int64(r.Attempt), 0, MaxAttempt)
		c.rangeInt(f+".pid", int64(r.PID), 0, math.MaxInt32)
		c.time(f+".startedAt", r.StartedAt)
		if !r.LastLine.IsZero() {
			c.time(f+".lastLine", r.LastLine)
		}
	}
}

// ports checks names (unique) and numbers; assigned ports are never 0.
func (c *checker) ports(field string, ps []Port, assigned bool) {
	seen := map[string]bool{}
	for i, p := range ps {
		f := fmt.Sprintf("%s[%d]", field, i)
		if err := CheckPortName(p.Name); err != nil {
			c.check(f+".name", err)
		} else if seen[p.Name] {
			c.bad(f+".name", "duplicate port %q", p.Name)
		}
		seen[p.Name] = true
		c.check(f+".port", CheckPortNumber(p.Port, assigned))
	}
}

func printable(s string) bool {
	for _, r := range s {
		if r < ' ' || r == 0x7f {
			return false
		}
	}
	return utf8.ValidString(s)
}

func hasNUL(s string) bool { return strings.IndexByte(s, 0) >= 0 }
