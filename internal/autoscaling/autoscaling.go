// Package autoscaling decides how many containers a function should run:
// a pure rule on counts, tested against a brute-force model, so the
// domain only gathers the counts and acts on the answer.
package autoscaling

// Input is what the decision looks at.
type Input struct {
	Backlog     int // calls waiting that could start now
	Running     int // calls handed to containers
	Live        int // containers starting or ready (not stopping)
	Concurrency int // calls one container runs at once (≥ 1)
	Min         int // min_containers
	KeepWarm    int // keep_warm: idle containers kept up even with no calls
	Max         int // max_containers (≥ 1)
}

// Floor is the number of containers kept up with no calls at all.
func (in Input) Floor() int { return min(max(in.Min, in.KeepWarm, 0), max(in.Max, 1)) }

// Desired is how many live containers the function should have: enough
// for every waiting and running call at its concurrency, never fewer than
// the floor, never more than the maximum. Live containers above it are not
// stopped here: idle ones leave after the scale-down window, so a burst
// that ends does not tear down containers the next burst needs.
func Desired(in Input) int {
	c := max(in.Concurrency, 1)
	calls := max(in.Backlog, 0) + max(in.Running, 0)
	need := (calls + c - 1) / c
	return min(max(need, in.Floor()), max(in.Max, 1))
}

// ToStart is how many containers to start now.
func ToStart(in Input) int { return max(Desired(in)-max(in.Live, 0), 0) }

// MayStop reports whether an idle container may leave: only while the
// live containers exceed the floor, and never below what the calls need.
func MayStop(in Input) bool {
	return in.Live > in.Floor() && in.Live > Desired(in)
}
