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
