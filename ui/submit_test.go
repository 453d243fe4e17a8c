package ui_test

import (
	"context"
	"html"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/ent/job"
	"github.com/levers9/levers9/ent/queue"
	"github.com/levers9/levers9/internal/buckets"
	"github.com/levers9/levers9/internal/dbtest"
	"github.com/levers9/levers9/internal/queues"
	"github.com/levers9/levers9/internal/viewer"
)

// The form offers only the queues the member's groups may use; posting
// another queue anyway is refused at the queue field; a good form stores
// the job and opens its page, where it can be cancelled.
func TestDashboardSubmitAndCancel(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, dbURL string) {
		e := newEnv(t, dbURL)
		if _, err := (&queues.Service{Ent: e.db.Ent}).Create(viewer.NewContext(context.Background(), e.admin), ent.CreateQueueInput{Name: "private"}); err != nil {
			t.Fatal(err)
		}
		e.bucket("results", true)
		e.bucket("reference", false)
		b := e.browser()
		b.signIn(memberEmail)
		code, body := b.get("/submit")
		if code != http.StatusOK || !strings.Contains(body, `<option value="default"`) {
			t.Fatalf("GET /submit: %d, offers default: %v", code, strings.Contains(body, `value="default"`))
		}
		if strings.Contains(body, `value="private"`) {
			t.Error("the form offers a queue none of the member's groups may use")
		}
		// The mounts offered are exactly what Files.Mountable allows.
		memberCtx := viewer.NewContext(context.Background(), e.viewerOf(memberEmail))
		mountable, err := (&buckets.Files{Ent: e.db.Ent}).Mountable(memberCtx, "default")
		if err != nil {
			t.Fatal(err)
		}
		var want []string
		for _, bk := range mountable {
			want = append(want, bk.Name)
		}
		t.Logf("mountable from default: %v", want)
		var offered []string
		for _, m := range regexp.MustCompile(`name="mount" value="([^"]+)"`).FindAllStringSubmatch(body, -1) {
			offered = append(offered, m[1])
		}
		if strings.Join(offered, ",") != strings.Join(want, ",") {
			t.Errorf("the form offers mounts %v; Files.Mountable gives %v", offered, want)
		}
		_, est := b.get("/submit/estimate?queue=default&services=1&services%5B0%5D.name=main&services%5B0%5D.command=true")
		if !strings.Contains(est, `"mountable":["`+strings.Join(want, `","`)+`"]`) && len(want) > 0 {
			t.Errorf("the live estimate offers other mounts than %v: %s", want, est)
		}
		form := url.Values{"queue": {"private"}, "services": {"1"}, "services[0].name": {"main"},
			"services[0].command": {"sleep 60"}, "services[0].cpu": {"0.1"}, "services[0].memoryMiB": {"64"}, "action": {"submit"}}
		res, body := b.post("/submit", form)
		if res.StatusCode != http.StatusBadRequest || !strings.Contains(html.UnescapeString(body), "none of your groups may use queue private") ||
			!strings.Contains(body, `id="queue-errors"`) {
			t.Errorf("submitting to a queue the member may not use: %d, error at the queue: %v", res.StatusCode, strings.Contains(body, "queue-errors"))
		}

		form.Set("queue", "default")
		form.Set("name", "from the form")
		res, _ = b.post("/submit", form)
		if res.StatusCode != http.StatusSeeOther || !strings.HasPrefix(res.Header.Get("Location"), "/jobs/job_") {
			t.Fatalf("submitting: %d to %q; want the job's page", res.StatusCode, res.Header.Get("Location"))
		}
		jobPath := res.Header.Get("Location")
		code, body = b.get(jobPath)
		if code != http.StatusOK || !strings.Contains(body, "from the form") || !strings.Contains(body, `id="cancel-job"`) {
			t.Fatalf("the new job's page: %d, has a cancel button: %v", code, strings.Contains(body, "cancel-job"))
		}
		res, _ = b.post(jobPath+"/cancel", nil)
		if res.StatusCode != http.StatusSeeOther {
			t.Fatalf("cancel: %d", res.StatusCode)
		}
		j, err := e.db.Ent.Job.Get(viewer.SystemContext(context.Background()), strings.TrimPrefix(jobPath, "/jobs/"))
		if err != nil {
			t.Fatal(err)
		}
		if j.Status != job.StatusCancelled || j.Name != "from the form" || j.QueueID == "" {
			t.Errorf("job after cancelling: %s %q", j.Status, j.Name)
		}
		if _, body := b.get(jobPath); strings.Contains(body, `id="cancel-job"`) {
			t.Error("a cancelled job still offers cancelling")
		}
	})
}

// The form submits interactive jobs: an interactive-only queue refuses the
// job at the interactive field until the box is checked, then stores an
// interactive job (the rule itself is jobs.Submit's).
func TestDashboardSubmitInteractive(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, dbURL string) {
		e := newEnv(t, dbURL)
		admin := viewer.NewContext(context.Background(), e.admin)
		interactive := queue.ModeInteractive
		if _, err := (&queues.Service{Ent: e.db.Ent}).Create(admin, ent.CreateQueueInput{Name: "inter", Mode: &interactive}); err != nil {
			t.Fatal(err)
		}
		b := e.browser()
		b.signIn(adminEmail)
		form := url.Values{"queue": {"inter"}, "services": {"1"}, "services[0].name": {"main"},
			"services[0].command": {"sleep 60"}, "services[0].cpu": {"0.1"}, "services[0].memoryMiB": {"64"}, "action": {"submit"}}
		res, body := b.post("/submit", form)
		if res.StatusCode != http.StatusBadRequest || !strings.Contains(body, "takes interactive jobs only") ||
			!strings.Contains(body, `id="interactive-errors"`) {
			t.Fatalf("a batch job on an interactive queue: %d, error at the box: %v", res.StatusCode, strings.Contains(body, "interactive-errors"))
		}
		if !strings.Contains(body, `id="interactive"`) {
			t.Fatal("the form has no interactive box")
		}
		form.Set("interactive", "on")
		res, _ = b.post("/submit", form)
		if res.StatusCode != http.StatusSeeOther || !strings.HasPrefix(res.Header.Get("Location"), "/jobs/job_") {
			t.Fatalf("submitting an interactive job: %d to %q; want the job's page", res.StatusCode, res.Header.Get("Location"))
		}
		id := strings.TrimPrefix(res.Header.Get("Location"), "/jobs/")
		j, err := e.db.Ent.Job.Get(admin, id)
		if err != nil {
			t.Fatal(err)
		}
		if !j.Interactive {
			t.Fatalf("job %s is not interactive", id)
		}
	})
}
