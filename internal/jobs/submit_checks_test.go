package jobs_test

import (
	"context"
	"errors"
	"testing"

	"github.com/levers9/levers9/internal/dbtest"
	"github.com/levers9/levers9/internal/fault"
	"github.com/levers9/levers9/internal/jobspec"
	"github.com/levers9/levers9/internal/viewer"
)

// TestSubmitRequireProject: the queue look-up also answers whether the
// tenant takes jobs without a project; a tenant that requires one still
// refuses them (after the queue's own checks), writing nothing, and takes
// them again once the setting is off.
func TestSubmitRequireProject(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		t.Parallel()
		w := newWorld(t, url)
		s := w.service(w.schedule)
		setRequire := func(on bool) {
			t.Helper()
			tid := viewer.FromContext(w.admin).TenantID
			if err := w.db.Ent.Tenant.UpdateOneID(tid).SetRequireProject(on).Exec(viewer.SystemContext(context.Background())); err != nil {
				t.Fatal(err)
			}
		}
		spec := twoServices()
		tests := []struct {
			name      string
			require   bool
			spec      func(jobspec.Job) jobspec.Job
			wantCode  fault.Code
			wantField string
		}{
			{name: "required, none named", require: true, spec: func(j jobspec.Job) jobspec.Job { return j },
				wantCode: fault.BadUserInput, wantField: "project"},
			{name: "required, unknown queue first", require: true,
				spec:     func(j jobspec.Job) jobspec.Job { j.Queue = "nope"; return j },
				wantCode: fault.NotFound, wantField: "queue"},
			{name: "required, limits first", require: true,
				spec:     func(j jobspec.Job) jobspec.Job { j.Services[0].CPU = 4000; return j },
				wantCode: fault.BadUserInput, wantField: "services"},
			{name: "required, unknown project", require: true,
				spec:     func(j jobspec.Job) jobspec.Job { j.Project = "nope"; return j },
				wantCode: fault.NotFound, wantField: "project"},
			{name: "not required", require: false, spec: func(j jobspec.Job) jobspec.Job { return j }},
		}
		// Sequential: the cases share the tenant's setting.
		for _, tc := range tests {
			setRequire(tc.require)
			j0, s0, r0 := w.rows(t)
			sp := spec
			sp.Services = append([]jobspec.Service(nil), spec.Services...)
			_, err := s.Submit(w.admin, tc.spec(sp))
			if tc.wantCode == "" {
				if err != nil {
					t.Fatalf("%s: %v", tc.name, err)
				}
				continue
			}
			var fe *fault.Error
			if !errors.As(err, &fe) || fe.Code != tc.wantCode || fe.Field != tc.wantField {
				t.Fatalf("%s: err = %v, want %s on %s", tc.name, err, tc.wantCode, tc.wantField)
			}
			if j, sv, r := w.rows(t); j != j0 || sv != s0 || r != r0 {
				t.Fatalf("%s: refused submission wrote rows: jobs %d→%d, services %d→%d, river %d→%d", tc.name, j0, j, s0, sv, r0, r)
			}
		}
	})
}
