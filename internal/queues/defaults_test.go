package queues

import (
	"errors"
	"math"
	"testing"

	"github.com/levers9/levers9/internal/fault"
)

func TestCheckDefaults(t *testing.T) {
	t.Parallel()
	ok := limits{defaultCPU: 1, maxCPU: 64, defaultMemory: 1024, maxMemory: 4096}
	for _, tc := range []struct {
		name  string
		edit  func(*limits)
		field string // "" when accepted
	}{
		{"defaults", func(*limits) {}, ""},
		{"at the maxima", func(l *limits) { l.defaultCPU, l.defaultMemory = 64, 4096 }, ""},
		{"zero CPU", func(l *limits) { l.defaultCPU = 0 }, "defaultCPU"},
		{"NaN CPU", func(l *limits) { l.defaultCPU = math.NaN() }, "defaultCPU"},
		{"CPU over the job limit", func(l *limits) { l.maxCPU = 0.5 }, "defaultCPU"},
		{"infinite CPU limit", func(l *limits) { l.maxCPU = math.Inf(1) }, "maxCPUPerJob"},
		{"negative infinite CPU limit", func(l *limits) { l.maxCPU = math.Inf(-1) }, "maxCPUPerJob"},
		{"NaN CPU limit", func(l *limits) { l.maxCPU = math.NaN() }, "maxCPUPerJob"},
		{"zero CPU limit", func(l *limits) { l.maxCPU = 0 }, "maxCPUPerJob"},
		{"negative CPU limit", func(l *limits) { l.maxCPU = -1 }, "maxCPUPerJob"},
		{"CPU limit 1e30", func(l *limits) { l.maxCPU = 1e30 }, "maxCPUPerJob"},
		{"CPU limit at the largest job", func(l *limits) { l.maxCPU = 4096 }, ""},
		{"infinite default CPU", func(l *limits) { l.defaultCPU, l.maxCPU = math.Inf(1), 4096 }, "defaultCPU"},
		{"zero memory", func(l *limits) { l.defaultMemory = 0 }, "defaultMemoryMib"},
		{"memory over the job limit", func(l *limits) { l.defaultMemory = 4097 }, "defaultMemoryMib"},
	} {
		l := ok
		tc.edit(&l)
		err := checkDefaults(l)
		var fe *fault.Error
		switch {
		case tc.field == "" && err != nil:
			t.Errorf("%s: refused: %v", tc.name, err)
		case tc.field != "" && (!errors.As(err, &fe) || fe.Field != tc.field || fe.Code != fault.BadUserInput):
			t.Errorf("%s: err = %v, want BAD_USER_INPUT on %s", tc.name, err, tc.field)
		}
	}
}
