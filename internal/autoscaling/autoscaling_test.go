package autoscaling

import "testing"

// model is the rule spelled out by search: the smallest count of
// containers that serves every call at the concurrency, raised to the
// floor, capped at the maximum.
func model(in Input) int {
	c := max(in.Concurrency, 1)
	floor := max(in.Min, in.KeepWarm, 0)
	top := max(in.Max, 1)
	best := top
	for n := 0; n <= top; n++ {
		if n*c >= max(in.Backlog, 0)+max(in.Running, 0) && n >= floor {
			best = n
			break
		}
	}
	return min(best, top)
}

func TestDesiredAgreesWithModel(t *testing.T) {
	t.Parallel()
	for backlog := 0; backlog <= 12; backlog++ {
		for running := 0; running <= 6; running += 3 {
			for conc := 0; conc <= 4; conc++ {
				for lo := 0; lo <= 3; lo++ {
					for warm := 0; warm <= 3; warm += 2 {
						for top := 0; top <= 5; top++ {
							in := Input{Backlog: backlog, Running: running, Concurrency: conc, Min: lo, KeepWarm: warm, Max: top}
							if got, want := Desired(in), model(in); got != want {
								t.Fatalf("Desired(%+v) = %d, model says %d", in, got, want)
							}
							for live := 0; live <= 6; live++ {
								in.Live = live
								if got := live + ToStart(in); got < Desired(in) && got <= max(top, 1) {
									t.Fatalf("%+v: %d live after starting, want at least %d", in, got, Desired(in))
								}
								if MayStop(in) && live-1 < min(Desired(in), in.Floor()) {
									t.Fatalf("%+v: a stop would leave %d, below what is needed", in, live-1)
								}
							}
						}
					}
				}
			}
		}
	}
}

func TestDesiredCases(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		in   Input
		want int
	}{
		{"idle, no floor", Input{Max: 10}, 0},
		{"keep warm", Input{KeepWarm: 2, Max: 10}, 2},
		{"one call", Input{Backlog: 1, Max: 10, Concurrency: 1}, 1},
		{"burst capped", Input{Backlog: 100, Max: 4, Concurrency: 1}, 4},
		{"concurrency packs calls", Input{Backlog: 7, Concurrency: 4, Max: 10}, 2},
		{"floor above max is capped", Input{Min: 5, Max: 2}, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := Desired(tc.in); got != tc.want {
				t.Fatalf("Desired = %d, want %d", got, tc.want)
			}
		})
	}
}
