package functions

import (
	"context"
	"fmt"
	"strings"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/ent/app"
	"github.com/levers9/levers9/ent/function"
	"github.com/levers9/levers9/ent/task"
	"github.com/levers9/levers9/internal/database"
	"github.com/levers9/levers9/internal/fault"
	"github.com/levers9/levers9/internal/viewer"
)

// Deploy stores a new version of the deployed app spec.Name in the
// viewer's environment (creating the app at its first deploy): every
// function gets version = app.Version+1 and the live version moves to it.
// Older versions keep serving until stopped. A deployment name served by
// another deployed app of the environment is refused; secrets named must
// exist; cron expressions must parse. Bad input writes nothing. The app
// returned carries the new version's functions.
func (s *Service) Deploy(ctx context.Context, spec AppSpec) (*ent.App, error) {
	v, plans, err := s.check(ctx, spec)
	if err != nil {
		return nil, err
	}
	var out *ent.App
	version := 1
	err = s.DB.InTx(ctx, func(tx *database.Tx) error {
		a, err := deployedApp(ctx, tx.Ent, spec.Name)
		switch {
		case ent.IsNotFound(err):
			a, err = tx.Ent.App.Create().
				SetTenantID(v.TenantID).SetEnvironmentID(v.EnvironmentID).
				SetName(spec.Name).SetEphemeral(false).SetState(app.StateDEPLOYED).
				SetCodeHash(spec.CodeHash).SetOwnerID(v.UserID).SetVersion(1).SetLiveVersion(1).
				Save(ctx)
			if err != nil {
				return fmt.Errorf("storing app %s: %w", spec.Name, err)
			}
		case err != nil:
			return fmt.Errorf("reading app %s: %w", spec.Name, err)
		default:
			if a.OwnerID != v.UserID && !v.Admin {
				return fault.New(fault.Forbidden, "app %s is another user's: only they or an admin deploy it", a.Name)
			}
			version = a.Version + 1
			a, err = tx.Ent.App.UpdateOneID(a.ID).SetVersion(version).SetLiveVersion(version).
				SetCodeHash(spec.CodeHash).Save(ctx)
			if err != nil {
				return fmt.Errorf("storing version %d of app %s: %w", version, spec.Name, err)
			}
		}
		if err := clashes(ctx, tx.Ent, a, plans); err != nil {
			return err
		}
		if err := s.createFunctions(ctx, tx, v, a, version, spec.CodeHash, plans); err != nil {
			return err
		}
		out, err = tx.Ent.App.Query().Where(app.ID(a.ID)).
			WithFunctions(func(q *ent.FunctionQuery) { q.Where(function.Version(version)) }).Only(ctx)
		return err
	})
	if ent.IsConstraintError(err) {
		// Another deploy of the app took the same version number, or
		// created the app, first.
		return nil, fault.New(fault.Unavailable, "another deploy of app %s is in progress: try again", spec.Name)
	}
	if err != nil {
		return nil, err
	}
	s.warm(ctx, out.Edges.Functions)
	s.Log.Info("app version deployed", "app", out.ID, "name", out.Name, "version", version, "functions", len(out.Edges.Functions))
	return out, nil
}

// clashes refuses deployment names another deployed app of the
// environment serves under the same URL group: a URL names one function.
func clashes(ctx context.Context, c *ent.Client, a *ent.App, plans []*functionPlan) error {
	var names []string
	for _, p := range plans {
		if GroupOf(p.spec.Kind) != "" {
			names = append(names, p.spec.Deployment)
		}
	}
	if len(names) == 0 {
		return nil
	}
	taken, err := c.Function.Query().Where(function.DeploymentIn(names...), function.StoppedAtIsNil(),
		function.HasAppWith(app.IDNEQ(a.ID), app.Ephemeral(false), app.StateNEQ(app.StateSTOPPED))).
		WithApp().All(ctx)
	if err != nil {
		return fmt.Errorf("reading deployments of other apps: %w", err)
	}
	for i, p := range plans {
		for _, f := range taken {
			if f.Deployment == p.spec.Deployment && GroupOf(f.Kind) == GroupOf(p.spec.Kind) {
				return fault.Invalid(fmt.Sprintf("functions[%d].deployment", i),
					"deployment name %q is served by app %s (/%s/%s): choose another with name=, or stop that app",
					p.spec.Deployment, f.Edges.App.Name, GroupOf(f.Kind), f.Deployment)
			}
		}
	}
	return nil
}

// ownApp reads app id for a change: the viewer must own it or be an admin.
func (s *Service) ownApp(ctx context.Context, id string) (*ent.App, error) {
	a, err := s.DB.Ent.App.Get(ctx, id)
	if ent.IsNotFound(err) {
		return nil, fault.Missing(fmt.Sprintf("app %q", clip(id)))
	}
	if err != nil {
		return nil, fmt.Errorf("reading app %s: %w", id, err)
	}
	if v := viewer.FromContext(ctx); a.OwnerID != v.UserID && !v.Admin {
		return nil, fault.New(fault.Forbidden, "app %s is another user's: only they or an admin change it", a.Name)
	}
	return a, nil
}

// StopVersion stops version v of a deployed app: its calls are cancelled,
// its containers stopped, its URLs answer 404. Stopping the live version
// moves the alias to the newest serving one; stopping the last one stops
// the app. An ephemeral app has one version: stopping it stops the app.
func (s *Service) StopVersion(ctx context.Context, appID string, v int) (*ent.App, error) {
	a, err := s.ownApp(ctx, appID)
	if err != nil {
		return nil, err
	}
	if a.Ephemeral {
		if v != 1 {
			return nil, fault.Invalid("version", "ephemeral app %s has only version 1", a.Name)
		}
		return s.StopApp(ctx, appID, "")
	}
	if a.State == app.StateSTOPPED {
		return a, nil
	}
	fns, err := s.DB.Ent.Function.Query().Where(function.AppID(appID), function.Version(v)).All(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading version %d of app %s: %w", v, a.Name, err)
	}
	if len(fns) == 0 {
		return nil, &fault.Error{Code: fault.NotFound, Field: "version", Message: fmt.Sprintf("app %s has no version %d", a.Name, v)}
	}
	if fns[0].StoppedAt != nil {
		return a, nil
	}
	who := "stopped by " + viewer.FromContext(ctx).UserID
	now := s.now()
	ids := make([]string, len(fns))
	for i, f := range fns {
		ids[i] = f.ID
	}
	last := false
	err = s.DB.InTx(ctx, func(tx *database.Tx) error {
		if err := tx.Ent.Function.Update().Where(function.IDIn(ids...), function.StoppedAtIsNil()).
			SetStoppedAt(now).Exec(ctx); err != nil {
			return fmt.Errorf("stopping version %d of app %s: %w", v, a.Name, err)
		}
		newest, err := newestServing(ctx, tx.Ent, appID, 0)
		if err != nil {
			return err
		}
		u := tx.Ent.App.UpdateOneID(appID)
		switch {
		case newest == 0:
			last = true
			u.SetState(app.StateSTOPPED).SetStoppedAt(now).SetStopReason(fmt.Sprintf("its last version (%d) was %s", v, who))
		case a.LiveVersion == v:
			u.SetLiveVersion(newest)
		}
		return u.Exec(ctx)
	})
	if err != nil {
		return nil, err
	}
	reason := fmt.Sprintf("version %d %s", v, who)
	if err := s.cancelOpen(ctx, task.FunctionIDIn(ids...), reason); err != nil {
		return nil, err
	}
	s.stopContainers(ctx, ids, reason)
	s.Log.Info("app version stopped", "app", appID, "version", v, "app stopped", last)
	return s.DB.Ent.App.Get(ctx, appID)
}

// newestServing is the newest version of app appID with serving
// functions, below below when it is not 0; 0 when there is none.
func newestServing(ctx context.Context, c *ent.Client, appID string, below int) (int, error) {
	q := c.Function.Query().Where(function.AppID(appID), function.StoppedAtIsNil())
	if below > 0 {
		q.Where(function.VersionLT(below))
	}
	f, err := q.Order(ent.Desc(function.FieldVersion)).First(ctx)
	if ent.IsNotFound(err) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("reading versions of app %s: %w", appID, err)
	}
	return f.Version, nil
}

// Rollback points the app's unversioned URLs and lookups at serving
// version v (0: the newest serving version older than the live one).
func (s *Service) Rollback(ctx context.Context, appID string, v int) (*ent.App, error) {
	a, err := s.ownApp(ctx, appID)
	if err != nil {
		return nil, err
	}
	if a.Ephemeral || a.State == app.StateSTOPPED {
		return nil, fault.Invalid("app", "app %s is %s: only a deployed app's versions roll back", a.Name, strings.ToLower(a.State.String()))
	}
	if v < 0 {
		return nil, fault.Invalid("version", "must not be negative")
	}
	if v == 0 {
		if v, err = newestServing(ctx, s.DB.Ent, appID, a.LiveVersion); err != nil {
			return nil, err
		}
		if v == 0 {
			return nil, fault.Invalid("version", "app %s has no serving version older than %d", a.Name, a.LiveVersion)
		}
	} else {
		ok, err := s.DB.Ent.Function.Query().Where(function.AppID(appID), function.Version(v), function.StoppedAtIsNil()).Exist(ctx)
		if err != nil {
			return nil, fmt.Errorf("reading version %d of app %s: %w", v, a.Name, err)
		}
		if !ok {
			return nil, fault.Invalid("version", "version %d of app %s is not serving", v, a.Name)
		}
	}
	out, err := s.DB.Ent.App.UpdateOneID(appID).SetLiveVersion(v).Save(ctx)
	if err != nil {
		return nil, fmt.Errorf("rolling app %s back to version %d: %w", a.Name, v, err)
	}
	s.Log.Info("app rolled back", "app", appID, "from", a.LiveVersion, "to", v)
	return out, nil
}
