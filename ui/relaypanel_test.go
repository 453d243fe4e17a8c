package ui_test

import (
	"context"
	"strings"
	"testing"

	"github.com/levers9/levers9/ent/job"
	"github.com/levers9/levers9/ent/service"
	"github.com/levers9/levers9/internal/dbtest"
	"github.com/levers9/levers9/internal/jobspec"
	"github.com/levers9/levers9/internal/tenancy"
	"github.com/levers9/levers9/internal/viewer"
)

// A running service's panel offers its ports through the relay and the
// commands that reach it; terminal commands only to who may open one.
func TestJobPanelReachesService(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, dbURL string) {
		e := newEnv(t, dbURL)
		member := e.viewerOf(memberEmail)
		ctx := viewer.NewContext(context.Background(), member)
		j, err := e.jobs.Submit(ctx, jobspec.Job{Name: "nb", Queue: tenancy.DefaultQueue, Interactive: true,
			Services: []jobspec.Service{{Name: "main", Command: []string{"sh"}, TTY: true, CPU: 1, MemoryMiB: 64,
				Ports: []jobspec.Port{{Name: "http", Port: 8888}}}}})
		if err != nil {
			t.Fatal(err)
		}
		b := e.browser()
		b.signIn(memberEmail)
		page := "/jobs/" + j.ID + "?service=main"
		if _, body := b.get(page); strings.Contains(body, "service-ports") || strings.Contains(body, "attach-command") {
			t.Fatal("a pending service offers ports or a terminal")
		}

		sys := viewer.SystemContext(context.Background())
		if err := e.db.Ent.Job.UpdateOneID(j.ID).SetStatus(job.StatusRunning).Exec(sys); err != nil {
			t.Fatal(err)
		}
		if err := e.db.Ent.Service.Update().Where(service.JobID(j.ID)).SetStatus(service.StatusRunning).
			SetHostPorts([]jobspec.Port{{Name: "http", Port: 8888}}).Exec(sys); err != nil {
			t.Fatal(err)
		}
		_, body := b.get(page)
		for _, want := range []string{
			`href="` + e.srv.URL + "/relay/" + j.ID + `/main/http/"`,
			"levers9 port-forward " + j.ID + " main:http",
			"levers9 attach " + j.ID + " --service main",
			"levers9 exec -it " + j.ID + " --service main -- sh",
		} {
			if !strings.Contains(body, want) {
				t.Errorf("the owner's panel lacks %q", want)
			}
		}

		// The tenant admin may open a terminal too; a user of another
		// tenant sees no job at all (TestDashboardAuthorization).
		a := e.browser()
		a.signIn(adminEmail)
		if _, body := a.get(page); !strings.Contains(body, "attach-command") {
			t.Error("a tenant admin is not offered the attach command")
		}
	})
}
