package functions

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/levers9/levers9/ent/function"
	"github.com/levers9/levers9/internal/fault"
)

// Limits of a deployment's options.
const (
	MaxSyncTimeoutSeconds = 24 * 60 * 60
	DefaultSyncTimeout    = 60
	MaxSecrets            = 50
)

// httpMethods an endpoint may answer.
var httpMethods = []string{"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"}

// planDeployment checks and completes what makes p's function a
// deployment: its kind, URL name, HTTP options, secrets and schedule.
func (s *Service) planDeployment(ctx context.Context, i int, p *functionPlan) error {
	field := func(name string) string { return fmt.Sprintf("functions[%d].%s", i, name) }
	f := &p.spec
	if f.Kind == "" {
		f.Kind = function.KindFUNCTION
	}
	if err := function.KindValidator(f.Kind); err != nil {
		return fault.Invalid(field("kind"), "unknown kind %q", clip(string(f.Kind)))
	}
	if f.Deployment == "" {
		// A Python name need not fit a URL segment (_private): such a
		// function is reached by lookups only.
		f.Deployment = f.Name
	} else if !routeName.MatchString(f.Deployment) {
		return fault.Invalid(field("deployment"), "deployment name %q must be 1-63 letters, digits, '.', '_' or '-', starting and ending with a letter or digit", clip(f.Deployment))
	}
	// Only endpoints match a method; the SDK's defaults for other kinds
	// mean nothing.
	if f.Kind == function.KindENDPOINT {
		f.HTTPMethod = strings.ToUpper(f.HTTPMethod)
		if f.HTTPMethod != "" && !slices.Contains(httpMethods, f.HTTPMethod) {
			return fault.Invalid(field("httpMethod"), "method %q is not one of %s", clip(f.HTTPMethod), strings.Join(httpMethods, ", "))
		}
	} else {
		f.HTTPMethod = ""
	}
	if f.SyncTimeoutSeconds == 0 {
		f.SyncTimeoutSeconds = DefaultSyncTimeout
	}
	if f.SyncTimeoutSeconds < 1 || f.SyncTimeoutSeconds > MaxSyncTimeoutSeconds {
		return fault.Invalid(field("syncTimeoutSeconds"), "must be between 1 and %d", MaxSyncTimeoutSeconds)
	}
	if f.Public && GroupOf(f.Kind) == "" {
		return fault.Invalid(field("public"), "a %s function has no URL to make public", f.Kind)
	}
	if err := planBox(i, f); err != nil {
		return err
	}
	if f.Kind == function.KindCRON {
		if f.Cron == "" {
			return fault.Invalid(field("cron"), "a CRON function needs a schedule (\"*/15 * * * *\", \"@hourly\")")
		}
		sc, err := ParseCron(f.Cron)
		if err != nil {
			return fault.Invalid(field("cron"), "%v", err)
		}
		p.schedule = sc
	} else if f.Cron != "" {
		return fault.Invalid(field("cron"), "only CRON functions have a schedule (this one is %s)", f.Kind)
	}
	if len(f.Secrets) > MaxSecrets {
		return fault.Invalid(field("secrets"), "a function names at most %d secrets", MaxSecrets)
	}
	seen := map[string]bool{}
	for k, name := range f.Secrets {
		if name == "" || len(name) > 255 {
			return fault.Invalid(fmt.Sprintf("%s[%d]", field("secrets"), k), "secret name %q is empty or too long", clip(name))
		}
		if seen[name] {
			return fault.Invalid(fmt.Sprintf("%s[%d]", field("secrets"), k), "secret %q is named twice", clip(name))
		}
		seen[name] = true
	}
	if len(f.Secrets) > 0 && s.Secrets != nil {
		if err := s.Secrets.Check(ctx, f.Secrets); err != nil {
			var fe *fault.Error
			if errors.As(err, &fe) {
				out := *fe
				out.Field = field("secrets")
				out.Message = fmt.Sprintf("function %s: %s", f.Name, fe.Message)
				return &out
			}
			return fmt.Errorf("checking the secrets of %s: %w", f.Name, err)
		}
	}
	return nil
}
