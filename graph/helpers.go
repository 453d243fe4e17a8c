package graph

// deref returns *p, or the zero value for nil: optional GraphQL inputs.
func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

// derefOr returns *p, or d for nil.
func derefOr[T any](p *T, d T) T {
	if p == nil {
		return d
	}
	return *p
}

// ptrs points at each element of s.
func ptrs[T any](s []T) []*T {
	out := make([]*T, len(s))
	for i := range s {
		out[i] = &s[i]
	}
	return out
}

// seqArg is a fromSeq argument: lines are numbered from 1.
func seqArg(p *int) int64 { return int64(max(derefOr(p, 1), 1)) }
