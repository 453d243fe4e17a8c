// Package billing holds the one pricing function of levers9 and the token
// amount type. It is pure: no database, no clock of its own.
package billing

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
)

// Tokens is an amount of tokens in millionths of a token. Amounts on the
// ledger are integers so that sums never drift.
type Tokens int64

// Unit is one whole token.
const Unit Tokens = 1_000_000

// MaxTokens bounds any single amount (a trillion tokens) so sums of many
// amounts cannot overflow int64.
const MaxTokens = 1_000_000_000_000 * Unit

// String formats t as a decimal number of tokens ("12.5", "-0.000001").
func (t Tokens) String() string {
	sign := ""
	v := int64(t)
	if v < 0 {
		sign = "-"
		v = -v
	}
	whole, frac := v/int64(Unit), v%int64(Unit)
	if frac == 0 {
		return sign + strconv.FormatInt(whole, 10)
	}
	f := strings.TrimRight(fmt.Sprintf("%06d", frac), "0")
	return sign + strconv.FormatInt(whole, 10) + "." + f
}

// Float returns t in tokens, for display only.
func (t Tokens) Float() float64 { return float64(t) / float64(Unit) }

// The ways a token amount can be wrong. Every amount a client sends goes
// through ParseTokens or fromFloat, so these are the only rules.
var (
	errTokens     = errors.New("a token amount is a decimal number such as 12.5 or -3")
	errTokensFine = errors.New("a token amount has at most 6 decimal places (0.000001 is the smallest)")
	errTokensBig  = fmt.Errorf("a token amount is at most %d tokens either way", MaxTokens/Unit)
)

// ParseTokens parses a decimal number of tokens exactly ("1.25", "-3",
// "1e3"). NaN, infinities, amounts beyond MaxTokens and amounts finer than
// a micro-token are refused.
func ParseTokens(s string) (Tokens, error) {
	s = strings.TrimSpace(s)
	if strings.ContainsAny(s, "eE") {
		// Exponent forms come from JSON encoders of floats; go through a float
		// but reject anything that is not an exact micro-token amount.
		f, err := strconv.ParseFloat(s, 64)
		switch {
		case errors.Is(err, strconv.ErrRange):
			return 0, errTokensBig
		case err != nil:
			return 0, errTokens
		}
		return fromFloat(f)
	}
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	whole, frac, dot := strings.Cut(s, ".")
	switch {
	case whole == "" || (dot && frac == "") || !digits(whole) || !digits(frac):
		return 0, errTokens
	case len(strings.TrimRight(frac, "0")) > 6:
		return 0, errTokensFine
	}
	frac = (frac + "000000")[:6]
	w, err := strconv.ParseInt(whole, 10, 64)
	if err != nil || w > int64(MaxTokens/Unit) {
		return 0, errTokensBig
	}
	f, _ := strconv.ParseInt(frac, 10, 64)
	v := w*int64(Unit) + f
	if v > int64(MaxTokens) {
		return 0, errTokensBig
	}
	if neg {
		v = -v
	}
	return Tokens(v), nil
}

func digits(s string) bool {
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

func fromFloat(f float64) (Tokens, error) {
	switch {
	case math.IsNaN(f):
		return 0, errTokens
	case math.IsInf(f, 0) || math.Abs(f) > MaxTokens.Float():
		return 0, errTokensBig
	}
	v := math.Round(f * float64(Unit))
	if math.Abs(v-f*float64(Unit)) > 1e-3 {
		return 0, errTokensFine
	}
	return Tokens(v), nil
}

// MarshalGQL writes t as a JSON number, exactly.
func (t Tokens) MarshalGQL(w io.Writer) { _, _ = io.WriteString(w, t.String()) }

// UnmarshalGQL reads a GraphQL Tokens value: a number or a decimal string.
func (t *Tokens) UnmarshalGQL(v any) error {
	var (
		x   Tokens
		err error
	)
	switch v := v.(type) {
	case json.Number:
		x, err = ParseTokens(v.String())
	case string:
		x, err = ParseTokens(v)
	case int:
		x, err = ParseTokens(strconv.Itoa(v))
	case int64:
		x, err = ParseTokens(strconv.FormatInt(v, 10))
	case float64:
		x, err = fromFloat(v)
	default:
		err = errTokens
	}
	if err != nil {
		return err
	}
	*t = x
	return nil
}

// MarshalJSON writes t as an exact JSON number (used in JSON columns).
func (t Tokens) MarshalJSON() ([]byte, error) { return []byte(t.String()), nil }

// UnmarshalJSON reads an exact JSON number.
func (t *Tokens) UnmarshalJSON(b []byte) error {
	x, err := ParseTokens(strings.Trim(string(b), `"`))
	if err != nil {
		return err
	}
	*t = x
	return nil
}
