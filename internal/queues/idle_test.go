package queues

import (
	"testing"

	"github.com/levers9/levers9/internal/fault"
)

func TestCheckIdleTimeout(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		seconds *int
		ok      bool
	}{
		{nil, true},
		{ptr(0), true},
		{ptr(1800), true},
		{ptr(MaxIdleTimeoutSeconds), true},
		{ptr(MaxIdleTimeoutSeconds + 1), false},
		{ptr(-1), false},
	} {
		err := checkIdleTimeout(tc.seconds)
		if tc.ok != (err == nil) {
			t.Errorf("checkIdleTimeout(%v) = %v; want ok %v", deref(tc.seconds), err, tc.ok)
			continue
		}
		if err != nil {
			fs := fault.Classify(err)
			if len(fs) != 1 || fs[0].Field != "idleTimeoutSeconds" || fs[0].Code != fault.BadUserInput {
				t.Errorf("checkIdleTimeout(%d): %+v; want bad input on idleTimeoutSeconds", *tc.seconds, fs)
			}
		}
	}
}

func ptr(n int) *int { return &n }

func deref(p *int) any {
	if p == nil {
		return nil
	}
	return *p
}
