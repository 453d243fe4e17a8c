package jobs

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/ent/charge"
	"github.com/levers9/levers9/ent/job"
	"github.com/levers9/levers9/ent/queue"
	"github.com/levers9/levers9/internal/billing"
	"github.com/levers9/levers9/internal/fault"
	"github.com/levers9/levers9/internal/ledger"
	"github.com/levers9/levers9/internal/notify"
	"github.com/levers9/levers9/ui/app/live"

	"github.com/levers9/levers9/ui/components"
)

// liveListURL is the stream keeping the rows ids of the jobs table current;
// on the table's first page it also says when new jobs matching f appear.
func liveListURL(f filter, ids []string, firstPage bool) string {
	q := url.Values{}
	for _, id := range ids {
		q.Add("id", id)
	}
	if firstPage {
		q.Set("new", "1")
		for k, v := range map[string]string{"status": f.Status, "queue": f.Queue, "name": f.Name} {
			if v != "" {
				q.Set(k, v)
			}
		}
	}
	return "/jobs/live?" + q.Encode()
}

// listLive streams the changes of the table's rows (status, reason,
// start, duration, tokens, services' statuses) as the bus signals them,
// and, on the first page, a notice when jobs matching the filter were
// submitted since (IDs grow with time: newer than the newest row). Every
// read is the viewer's: another tenant's job IDs patch nothing.
func (h *handlers) listLive(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	f, err := parseFilter(q)
	if err != nil {
		return err
	}
	ids := q["id"]
	if len(ids) > PageSize {
		return fault.Invalid("id", "at most %d jobs, the rows of one page", PageSize)
	}
	watchNew := q.Get("new") == "1"
	shown, newest := map[string]bool{}, ""
	for _, id := range ids {
		shown[id] = true
		newest = max(newest, id)
	}
	keys, wake, stop := h.subscribeJobs()
	defer stop()
	// Every change of a job (its submission, or coming to match a status
	// filter) signals its queue too (jobs.Service.signal): only the
	// viewer's queues are counted for, so another tenant's activity reads
	// nothing here.
	myQueues := live.NewInterest(func(ctx context.Context, ids []string) ([]string, error) {
		return h.rt.Deps.DB.Ent.Queue.Query().Where(queue.IDIn(ids...)).IDs(ctx)
	})
	first, ended := true, map[string]bool{}
	return h.rt.Live(w, r, wake, func(ctx context.Context, s *live.Sender) (bool, error) {
		read, count := ids, watchNew
		jobIDs, queueIDs := keys.Take()
		if !first {
			read = nil
			for _, k := range jobIDs {
				if shown[k] {
					read = append(read, k)
				}
			}
			if count {
				var err error
				if count, err = myQueues.Any(ctx, queueIDs); err != nil {
					return false, err
				}
			}
		}
		first = false
		if count {
			n, err := f.apply(h.rt.Deps.DB.Ent.Job.Query().Where(job.IDGT(newest))).Count(ctx)
			if err != nil {
				return false, fmt.Errorf("counting new jobs: %w", err)
			}
			if n > 0 {
				if err := s.Stale(newJobsText(n)); err != nil {
					return false, err
				}
			}
		}
		if len(read) > 0 {
			patches, err := h.rowPatches(ctx, read, ended)
			if err != nil {
				return false, err
			}
			if err := s.Patch(patches...); err != nil {
				return false, err
			}
		}
		// Off the first page nothing new shows up: done once every row ended.
		return !watchNew && len(ended) == len(shown), nil
	})
}

func newJobsText(n int) string {
	if n == 1 {
		return "1 new job since this page was loaded."
	}
	return fmt.Sprintf("%d new jobs since this page was loaded.", n)
}

// jobKeys collects the jobs signalled on the bus; nil (no bus, in tests)
// takes none.
type jobKeys struct{ jobs, queues *notify.Keys }

// Take returns the jobs and the queues signalled since the last Take.
func (j jobKeys) Take() (jobs, queues []string) {
	if j.jobs == nil {
		return nil, nil
	}
	return j.jobs.Take(), j.queues.Take()
}

// subscribeJobs wakes on every job signal (a row changed) and queue signal
// (a job was submitted: Submit wakes only its queue). Without a bus
// nothing wakes.
func (h *handlers) subscribeJobs() (jobKeys, <-chan struct{}, func()) {
	bus := h.rt.Deps.Bus
	if bus == nil {
		return jobKeys{}, nil, func() {}
	}
	keys, stopJobs := bus.SubscribeAll(notify.TopicJob)
	queues, stopQueues := bus.SubscribeAll(notify.TopicQueue)
	wake, stopMerge := live.Merge(keys.C(), queues.C())
	return jobKeys{keys, queues}, wake, func() {
		stopMerge()
		stopQueues()
		stopJobs()
	}
}

// rowPatches re-reads the jobs ids as the viewer (three queries) and
// patches their rows; the jobs that ended are added to ended.
func (h *handlers) rowPatches(ctx context.Context, ids []string, ended map[string]bool) ([]live.Patch, error) {
	c := h.rt.Deps.DB.Ent
	js, err := c.Job.Query().Where(job.IDIn(ids...)).All(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading the table's jobs: %w", err)
	}
	services, err := h.rt.Deps.Jobs.ServicesOf(ctx, ids)
	if err != nil {
		return nil, err
	}
	spent := map[string]billing.Tokens{}
	totals, err := ledger.Totals(ctx, c.Charge.Query().Where(charge.JobIDIn(ids...)), ledger.ByJob)
	if err != nil {
		return nil, err
	}
	for _, t := range totals {
		spent[t.Key] = t.Tokens
	}
	now := time.Now()
	var ps []live.Patch
	for _, j := range js {
		rw := newRow(j, services[j.ID], spent[j.ID], now)
		if rw.Job.Ended {
			ended[j.ID] = true
		}
		p := "job-" + j.ID
		ps = append(ps, jobPatches(p, rw.Job)...)
		ps = append(ps, live.Text(p+"-tokens", rw.Tokens))
		for _, sv := range rw.Job.Services {
			ps = append(ps, live.TextClass(p+"-svc-"+sv.Name, sv.Status, components.StatusClass(sv.Status)))
		}
	}
	return ps, nil
}

// jobPatches patch the cells every view of job jv shows, their ids
// starting with prefix.
func jobPatches(prefix string, jv jobView) []live.Patch {
	took := live.Text(prefix+"-took", jv.Took)
	took.Attr = map[string]string{"data-since": jv.Since}
	return []live.Patch{
		live.TextClass(prefix+"-status", jv.Status, components.StatusClass(jv.Status)),
		live.Text(prefix+"-reason", orDash(jv.StatusReason)),
		live.Text(prefix+"-started", jv.Started),
		took,
	}
}

// statusClass is the class of components.Status's chip.

// detailLive streams the changes of a job's page: its status, reason and
// times, its services' statuses and, for the open service, its node, exit
// code and reason; the cancel button goes once the job has ended, and so
// does the stream.
func (h *handlers) detailLive(w http.ResponseWriter, r *http.Request) error {
	id, name := r.PathValue("id"), r.URL.Query().Get("service")
	// Checked before the stream starts, so another tenant's job is a 404.
	if _, err := h.rt.Deps.DB.Ent.Job.Query().Where(job.ID(id)).OnlyID(r.Context()); err != nil {
		return err
	}
	wake, stop := (<-chan struct{})(nil), func() {}
	if h.rt.Deps.Bus != nil {
		wake, stop = h.rt.Deps.Bus.Subscribe(notify.TopicJob, id)
	}
	defer stop()
	return h.rt.Live(w, r, wake, func(ctx context.Context, s *live.Sender) (bool, error) {
		j, err := h.rt.Deps.DB.Ent.Job.Query().Where(job.ID(id)).
			WithServices(func(q *ent.ServiceQuery) { q.WithNode() }).Only(ctx)
		if err != nil {
			return false, fmt.Errorf("reading job %s: %w", id, err)
		}
		jv := describeJob(j, j.Edges.Services, time.Now())
		ps := jobPatches("job", jv)
		for _, sv := range jv.Services {
			ps = append(ps, live.TextClass("svc-"+sv.Name+"-status", sv.Status, components.StatusClass(sv.Status)))
		}
		for _, sv := range j.Edges.Services {
			if sv.Name != name {
				continue
			}
			pn := describeService(sv)
			ps = append(ps, live.TextClass("service-chip", pn.Status, components.StatusClass(pn.Status)),
				live.Text("service-node", pn.Node), live.Text("service-exit", pn.ExitCode), live.Text("service-reason", pn.Reason))
		}
		if jv.Ended {
			ps = append(ps, live.Patch{ID: "cancel-form", Attr: map[string]string{"hidden": "hidden"}})
		}
		return jv.Ended, s.Patch(ps...)
	})
}
