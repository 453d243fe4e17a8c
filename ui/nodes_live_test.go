package ui_test

import (
	"context"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/levers9/levers9/ent/node"
	"github.com/levers9/levers9/ent/service"
	"github.com/levers9/levers9/internal/dbtest"
	"github.com/levers9/levers9/internal/inventory"
	"github.com/levers9/levers9/internal/notify"
	"github.com/levers9/levers9/internal/viewer"
)

// TestNodesChartsAndLive: the Nodes page draws GPUs booked and free per
// node and type with the booked GPU-hours as its total; its live stream
// patches a node's status when the bus signals a change, says the page is
// stale when a job ends on a node, and never names another tenant's node.
func TestNodesChartsAndLive(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, dbURL string) {
		e := newEnv(t, dbURL)
		sys := viewer.SystemContext(context.Background())
		inv := inventory.Inventory{CPUs: 8, MemoryMiB: 4096, GPUs: []inventory.GPU{{Type: "A100", Count: 4}}}
		n := e.db.Ent.Node.Create().SetTenantID(e.tenant.ID).SetName("gpu-1").SetStatus(node.StatusOnline).SetInventory(inv).SaveX(sys)
		theirs := e.db.Ent.Node.Create().SetTenantID(e.other.TenantID).SetName("their-box").SetStatus(node.StatusOnline).SetInventory(inv).SaveX(sys)
		j := e.submit(e.admin, "train", "sleep 600")
		// Two GPUs booked for the last two whole hours and this one so far
		// (GPUs are immutable: set as the submission would have).
		hour := time.Now().UTC().Truncate(time.Hour)
		svc := e.db.Ent.Service.Update().Where(service.JobID(j.ID)).SetNodeID(n.ID).SetStatus(service.StatusRunning).
			SetGpuType("A100").SetDispatchedAt(hour.Add(-2 * time.Hour)).SetStartedAt(hour.Add(-2 * time.Hour))
		if err := svc.Exec(sys); err != nil {
			t.Fatal(err)
		}
		if _, err := e.db.SQL.ExecContext(t.Context(), "UPDATE services SET gpus = 2 WHERE job_id = $1", j.ID); err != nil {
			t.Fatal(err)
		}

		a := e.browser()
		a.signIn(adminEmail)
		code, body := a.get("/nodes")
		if code != http.StatusOK {
			t.Fatalf("GET /nodes: %d", code)
		}
		chart := regexp.MustCompile(`<figure class="chart" id="gpus-` + n.ID + `-A100" data-total="([^"]*)"`).FindStringSubmatch(body)
		if chart == nil {
			t.Fatalf("no GPU chart of gpu-1:\n%s", body)
		}
		booked := regexp.MustCompile(`<span class="series">booked</span> <span class="num">([^<]*)</span>`).FindStringSubmatch(body)
		lo, hi := 4+2*time.Since(hour).Hours()-0.1, 4+2*time.Since(hour).Hours()+0.1
		// Booked and free add up to the node's 4 GPUs over the window so far.
		all := 4 * (23 + time.Since(hour).Hours())
		if v, err := strconv.ParseFloat(chart[1], 64); err != nil || v < all-0.1 || v > all+0.1 {
			t.Errorf("total GPU-hours %s, want %.2f", chart[1], all)
		}
		if booked == nil {
			t.Fatal("no booked series in the legend")
		}
		if v, err := strconv.ParseFloat(booked[1], 64); err != nil || v < lo || v > hi {
			t.Errorf("booked GPU-hours %s, want %.2f to %.2f", booked[1], lo, hi)
		}
		if strings.Contains(body, "their-box") || strings.Contains(body, theirs.ID) {
			t.Error("the page names another tenant's node")
		}
		live := regexp.MustCompile(`data-live="(/nodes/live\?v=[a-z0-9]+)"`).FindStringSubmatch(body)
		if live == nil {
			t.Fatal("no live stream on the nodes table")
		}

		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		events := a.openStream(ctx, live[1], "")
		first := next(t, events)
		if first.event != "patch" || !strings.Contains(first.data, `"id":"node-`+n.ID+`-status","text":"ONLINE"`) {
			t.Fatalf("first event %+v, want the rows' patch", first)
		}
		if strings.Contains(first.data, theirs.ID) {
			t.Error("the stream names another tenant's node")
		}
		// The node goes offline: its chip changes in place.
		e.db.Ent.Node.UpdateOneID(n.ID).SetStatus(node.StatusOffline).ExecX(sys)
		if err := e.jobs.Bus.Publish(ctx, notify.TopicNode, n.ID); err != nil {
			t.Fatal(err)
		}
		ev := next(t, events)
		if ev.event != "patch" || ev.data != `[{"id":"node-`+n.ID+`-status","text":"OFFLINE","class":"status status-OFFLINE"}]` {
			t.Fatalf("after going offline: %+v", ev)
		}
		// The job ends: the running list cannot be patched, the page is stale.
		e.db.Ent.Service.Update().Where(service.JobID(j.ID)).SetStatus(service.StatusComplete).SetFinishedAt(time.Now()).ExecX(sys)
		if err := e.jobs.Bus.Publish(ctx, notify.TopicJob, j.ID); err != nil {
			t.Fatal(err)
		}
		for {
			ev = next(t, events)
			if ev.event == "stale" {
				break
			}
			if ev.event != "patch" {
				t.Fatalf("after the job ended: %+v, want a stale notice", ev)
			}
		}
	})
}
