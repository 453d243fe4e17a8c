package nodes

import (
	"context"
	"hash/fnv"
	"net/http"
	"strconv"
	"strings"

	"github.com/levers9/levers9/ent/node"
	"github.com/levers9/levers9/ent/queue"
	"github.com/levers9/levers9/internal/notify"
	"github.com/levers9/levers9/ui/app/live"

	"github.com/levers9/levers9/ui/components"
)

// live streams the changes of the nodes table (ui/app/live): status,
// free CPUs, memory and GPUs, heartbeat and agent version are patched in
// place; when what patches cannot show changed (a node joined or left,
// was renamed or drained, a job started or ended on one), the page is told
// it is stale. v is the signature of the rows the page was drawn with.
// Every read is the viewer's, as the page's.
func (h *handlers) live(w http.ResponseWriter, r *http.Request) error {
	drawn := r.URL.Query().Get("v")
	bus := h.rt.Deps.Bus
	var wake <-chan struct{}
	// Taken on every wake, so the sets stay small; another tenant's keys
	// wake the stream but read nothing (live.Interest).
	take := func() (nodes, queues, jobs []string) { return nil, nil, nil }
	if bus != nil {
		// Nodes come and go (queue signals), jobs are placed (node signals)
		// and end (job signals).
		nodes, stopNodes := bus.SubscribeAll(notify.TopicNode)
		defer stopNodes()
		queues, stopQueues := bus.SubscribeAll(notify.TopicQueue)
		defer stopQueues()
		jobs, stopJobs := bus.SubscribeAll(notify.TopicJob)
		defer stopJobs()
		merged, stop := live.Merge(nodes.C(), queues.C(), jobs.C())
		defer stop()
		wake = merged
		take = func() ([]string, []string, []string) { return nodes.Take(), queues.Take(), jobs.Take() }
	}
	c := h.rt.Deps.DB.Ent
	myNodes := live.NewInterest(func(ctx context.Context, ids []string) ([]string, error) {
		return c.Node.Query().Where(node.IDIn(ids...)).IDs(ctx)
	})
	myQueues := live.NewInterest(func(ctx context.Context, ids []string) ([]string, error) {
		return c.Queue.Query().Where(queue.IDIn(ids...)).IDs(ctx)
	})
	myJobs := live.NewInterest(nil) // a job starting on a node signals the node
	told, first := drawn, true
	return h.rt.Live(w, r, wake, func(ctx context.Context, s *live.Sender) (bool, error) {
		nodeKeys, queueKeys, jobKeys := take()
		if !first {
			// The cheapest first: job keys need no lookup.
			mine, err := myJobs.Any(ctx, jobKeys)
			if err == nil && !mine {
				mine, err = myNodes.Any(ctx, nodeKeys)
			}
			if err == nil && !mine {
				mine, err = myQueues.Any(ctx, queueKeys)
			}
			if err != nil || !mine {
				return false, err
			}
		}
		first = false
		_, rows, err := h.rows(ctx)
		if err != nil {
			return false, err
		}
		var nodeIDs, jobIDs []string
		for _, n := range rows {
			nodeIDs = append(nodeIDs, n.ID)
			for _, sv := range n.Running {
				jobIDs = append(jobIDs, sv.JobID)
			}
		}
		myNodes.Set(nodeIDs)
		myJobs.Set(jobIDs)
		if err := s.Patch(patches(rows)...); err != nil {
			return false, err
		}
		if sig := signature(rows); sig != told {
			told = sig
			if err := s.Stale("Nodes or the jobs on them changed."); err != nil {
				return false, err
			}
		}
		return false, nil
	})
}

// patches are the live parts of rows, by element ID (see nodes.templ).
func patches(rows []nodeRow) []live.Patch {
	var out []live.Patch
	for _, n := range rows {
		p := "node-" + n.ID
		out = append(out,
			live.TextClass(p+"-status", n.Status, components.StatusClass(n.Status)),
			live.Text(p+"-cpus", n.CPUs), live.Text(p+"-memory", n.Memory),
			live.Text(p+"-heartbeat", n.Heartbeat), live.Text(p+"-agent", n.Agent))
		for i, g := range n.GPUs {
			out = append(out, live.Text(p+"-gpu-"+strconv.Itoa(i), g))
		}
	}
	return out
}

// signature sums up what of rows the patches cannot change: which nodes,
// their names, drain flags, runtimes, GPU types and running services.
func signature(rows []nodeRow) string {
	h := fnv.New64a()
	for _, n := range rows {
		parts := []string{n.ID, n.Name, strconv.FormatBool(n.Drain), n.Runtime, strconv.Itoa(len(n.GPUs))}
		for _, s := range n.Running {
			parts = append(parts, s.JobID, s.JobName, s.Name)
		}
		_, _ = h.Write([]byte(strings.Join(parts, "\x00") + "\x01"))
	}
	return strconv.FormatUint(h.Sum64(), 36)
}

// statusClass is the class of components.Status's chip (the jobs page
// has the same for its live chips).
