package functions

import (
	"context"
	"fmt"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/ent/app"
	"github.com/levers9/levers9/ent/environment"
	"github.com/levers9/levers9/ent/function"
	enttenant "github.com/levers9/levers9/ent/tenant"
	"github.com/levers9/levers9/internal/fault"
	"github.com/levers9/levers9/internal/viewer"
)

// Lookup finds function (or deployment) name of the deployed app appName
// in the viewer's environment, in version v (0: the live one). The
// function returned carries its app.
func (s *Service) Lookup(ctx context.Context, appName, name string, v int) (*ent.Function, error) {
	if vw := viewer.FromContext(ctx); !vw.InTenant() {
		return nil, fault.New(fault.Forbidden, "look functions up from inside a tenant")
	}
	if v < 0 {
		return nil, fault.Invalid("version", "must not be negative")
	}
	a, err := deployedApp(ctx, s.DB.Ent, appName)
	if ent.IsNotFound(err) {
		return nil, &fault.Error{Code: fault.NotFound, Field: "app", Message: fmt.Sprintf("no deployed app %q in this environment", clip(appName))}
	}
	if err != nil {
		return nil, fmt.Errorf("reading app %s: %w", appName, err)
	}
	if v == 0 {
		v = a.LiveVersion
	}
	fns, err := s.DB.Ent.Function.Query().
		Where(function.AppID(a.ID), function.Version(v), function.StoppedAtIsNil(),
			function.Or(function.Name(name), function.Deployment(name))).All(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading function %s of app %s: %w", name, appName, err)
	}
	if len(fns) == 0 {
		return nil, &fault.Error{Code: fault.NotFound, Field: "name",
			Message: fmt.Sprintf("app %s has no function %q serving in version %d", a.Name, clip(name), v)}
	}
	// A function's own name wins over another's deployment name.
	f := fns[0]
	for _, g := range fns {
		if g.Name == name {
			f = g
		}
	}
	f.Edges.App = a
	return f, nil
}

// deployedApp is the deployed (not stopped) app name in the viewer's
// environment, read through c (a transaction's when deploying).
func deployedApp(ctx context.Context, c *ent.Client, name string) (*ent.App, error) {
	return c.App.Query().
		Where(app.Name(name), app.Ephemeral(false), app.StateNEQ(app.StateSTOPPED)).
		Order(ent.Desc(app.FieldCreatedAt)).First(ctx)
}

// kindsOf are the kinds of function a URL group reaches.
func kindsOf(group string) []function.Kind {
	var out []function.Kind
	for _, k := range []function.Kind{function.KindFUNCTION, function.KindENDPOINT, function.KindASGI,
		function.KindREALTIME, function.KindTASK_QUEUE, function.KindCRON, function.KindBOX} {
		if GroupOf(k) == group {
			out = append(out, k)
		}
	}
	return out
}

// Resolve finds the function a deployment URL reaches in the viewer's
// environment (r.Tenant empty) or, for the public form, in the named
// tenant and environment where the function must be public; then ctx is
// replaced by one acting for the function's owner (returned). NotFound
// for anything the caller may not reach, stopped versions included. The
// function returned carries its app.
func (s *Service) Resolve(ctx context.Context, r Route) (context.Context, *ent.Function, error) {
	missing := &fault.Error{Code: fault.NotFound, Message: fmt.Sprintf("no deployment at %s", clip(r.Prefix()))}
	kinds := kindsOf(r.Group)
	if len(kinds) == 0 || r.Name == "" {
		return nil, nil, missing
	}
	if r.Tenant != "" {
		// No token: the URL names the tenant and environment, and only
		// a public deployment answers. Finding them is the system's.
		sys := viewer.SystemContext(ctx)
		tn, err := s.DB.Ent.Tenant.Query().Where(enttenant.Slug(r.Tenant)).Only(sys)
		if ent.IsNotFound(err) {
			return nil, nil, missing
		}
		if err != nil {
			return nil, nil, fmt.Errorf("reading tenant %s: %w", r.Tenant, err)
		}
		env, err := s.DB.Ent.Environment.Query().
			Where(environment.TenantID(tn.ID), environment.Name(r.Environment)).Only(sys)
		if ent.IsNotFound(err) {
			return nil, nil, missing
		}
		if err != nil {
			return nil, nil, fmt.Errorf("reading environment %s/%s: %w", r.Tenant, r.Environment, err)
		}
		f, err := s.route(sys, r, kinds, env.TenantID, env.ID)
		if err != nil || f == nil || !f.Public {
			return nil, nil, orMissing(err, missing)
		}
		return OwnerContext(ctx, f), f, nil
	}
	v := viewer.FromContext(ctx)
	if !v.InTenant() {
		return nil, nil, missing
	}
	f, err := s.route(viewer.SystemContext(ctx), r, kinds, v.TenantID, v.EnvironmentID)
	if err != nil || f == nil {
		return nil, nil, orMissing(err, missing)
	}
	return OwnerContext(ctx, f), f, nil
}

func orMissing(err, missing error) error {
	if err != nil {
		return err
	}
	return missing
}

// OwnerContext acts for f's owner in f's tenant and environment, as f's
// containers do (never an admin): what a public URL or a cron tick does
// in f's name.
func OwnerContext(ctx context.Context, f *ent.Function) context.Context {
	return viewer.NewContext(ctx, &viewer.Viewer{UserID: f.OwnerID, TenantID: f.TenantID, EnvironmentID: f.EnvironmentID})
}

// route finds the serving function r names in environment envID of
// tenant tenantID (read as the system, the scope given explicitly); nil
// when there is none.
func (s *Service) route(sys context.Context, r Route, kinds []function.Kind, tenantID, envID string) (*ent.Function, error) {
	q := s.DB.Ent.Function.Query().Where(function.TenantID(tenantID), function.EnvironmentID(envID),
		function.Deployment(r.Name), function.KindIn(kinds...), function.StoppedAtIsNil())
	switch {
	case r.AppID != "":
		q.Where(function.AppID(r.AppID), function.HasAppWith(app.Ephemeral(true), app.StateEQ(app.StateRUNNING)))
	case r.Version > 0:
		q.Where(function.Version(r.Version), function.HasAppWith(app.Ephemeral(false), app.StateEQ(app.StateDEPLOYED)))
	default:
		q.Where(function.HasAppWith(app.Ephemeral(false), app.StateEQ(app.StateDEPLOYED)))
	}
	fns, err := q.WithApp().Order(ent.Desc(function.FieldVersion)).All(sys)
	if err != nil {
		return nil, fmt.Errorf("resolving %s: %w", r.Prefix(), err)
	}
	for _, f := range fns {
		if r.AppID != "" || r.Version > 0 || f.Version == f.Edges.App.LiveVersion {
			return f, nil
		}
	}
	return nil, nil
}
