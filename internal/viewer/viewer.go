// Package viewer carries who is acting in a request through its context.
// Privacy rules in ent read it; every front door (GraphQL, dashboard, CLI
// handlers, workers) puts one in the context before touching the database.
package viewer

import "context"

// Viewer is the acting identity of a request.
type Viewer struct {
	UserID        string
	TenantID      string // empty for a superadmin who has not entered a tenant
	EnvironmentID string
	// Admin is true for tenant admins and for superadmins inside a tenant.
	Admin      bool
	Superadmin bool
	// System marks internal work (start-up, workers, credential checks) that
	// is not done on behalf of one user and bypasses tenant isolation.
	System bool
	// TokenID is the API token or session the request came with.
	TokenID string
}

type ctxKey struct{}

// NewContext returns ctx carrying v.
func NewContext(ctx context.Context, v *Viewer) context.Context {
	return context.WithValue(ctx, ctxKey{}, v)
}

// FromContext returns the viewer in ctx, or nil.
func FromContext(ctx context.Context) *Viewer {
	v, _ := ctx.Value(ctxKey{}).(*Viewer)
	return v
}

// SystemContext returns ctx acting as the system itself.
func SystemContext(ctx context.Context) context.Context {
	return NewContext(ctx, &Viewer{System: true})
}

// InTenant reports whether the viewer acts inside a tenant.
func (v *Viewer) InTenant() bool { return v != nil && v.TenantID != "" }
