package main

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// parseDuration reads every duration the command line and the server's
// environment take: a Go duration (90m, 2h30m) that may start with a
// number of days (30d, 1d12h), as token and invite lifetimes are counted
// in days. Empty, negative and overflowing values are refused.
func parseDuration(s string) (time.Duration, error) {
	if s == "" {
		return 0, errors.New("empty duration")
	}
	if strings.HasPrefix(s, "-") {
		return 0, fmt.Errorf("%q: a duration must not be negative", s)
	}
	var days time.Duration
	rest := s
	// Go's units (ns, us, µs, ms, s, m, h) have no d: a d ends the days.
	if n, after, ok := strings.Cut(s, "d"); ok {
		d, err := strconv.ParseInt(n, 10, 64)
		if err != nil || d < 0 || n[0] == '+' || strings.HasPrefix(after, "+") || strings.HasPrefix(after, "-") {
			return 0, fmt.Errorf("%q: want a whole number of days before d, as in 30d or 1d12h", s)
		}
		if d > int64(math.MaxInt64/(24*time.Hour)) {
			return 0, fmt.Errorf("%q: too long", s)
		}
		days, rest = time.Duration(d)*24*time.Hour, after
		if rest == "" {
			return days, nil
		}
	}
	d, err := time.ParseDuration(rest)
	if err != nil {
		return 0, fmt.Errorf("%q: want a duration such as 90m, 2h30m or 30d", s)
	}
	if d < 0 {
		return 0, fmt.Errorf("%q: a duration must not be negative", s)
	}
	if d > math.MaxInt64-days {
		return 0, fmt.Errorf("%q: too long", s)
	}
	return days + d, nil
}

// durationValue is a duration flag read by parseDuration, for the
// command library's flags and the server's flag package alike.
type durationValue struct{ d *time.Duration }

func (v durationValue) String() string {
	if v.d == nil {
		return "0s"
	}
	return v.d.String()
}

func (v durationValue) Set(s string) error {
	d, err := parseDuration(s)
	if err != nil {
		return err
	}
	*v.d = d
	return nil
}

func (durationValue) Type() string { return "duration" }
