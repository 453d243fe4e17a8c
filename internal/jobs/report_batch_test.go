package jobs_test

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/levers9/levers9/ent/job"
	"github.com/levers9/levers9/ent/jobevent"
	"github.com/levers9/levers9/ent/service"
	"github.com/levers9/levers9/internal/dbtest"
	"github.com/levers9/levers9/internal/fixture"
	"github.com/levers9/levers9/internal/jobs"
	"github.com/levers9/levers9/internal/jobspec"
	"github.com/levers9/levers9/internal/metrics"
	"github.com/levers9/levers9/internal/notify"
	"github.com/levers9/levers9/internal/tenancy"
)

// placedServices submits a job of the named services and places them on
// the node, sent.
func (m *machine) placedServices(t *testing.T, names ...string) string {
	t.Helper()
	var svcs []jobspec.Service
	for _, n := range names {
		s := fixture.Service(0.5, 32)
		s.Name = n
		svcs = append(svcs, s)
	}
	j := m.tn.SubmitSpec(t, m.js, nil, jobspec.Job{Queue: tenancy.DefaultQueue, Services: svcs})
	err := m.tn.DB.Ent.Service.Update().Where(service.JobID(j.ID)).
		SetNodeID(m.node).SetDispatchedAt(m.start).Exec(fixture.Sys())
	if err != nil {
		t.Fatal(err)
	}
	return j.ID
}

// volatile are the parts of a snapshot two equal histories of two jobs
// differ in (besides the job's ID): row update and submission times, the
// exit code's pointer (compared apart) and the shared freed counter.
var volatile = regexp.MustCompile(`updated=[^\n]*|"submitted" [^\n]*|exit=0x[0-9a-f]+|freed \d+`)

func (m *machine) history(t *testing.T, id string) string {
	t.Helper()
	return volatile.ReplaceAllString(strings.ReplaceAll(m.snapshot(t, id), id, "JOB"), "")
}

// ApplyReports writes what the reports applied one by one write (job and
// service states, events, charges), for every sequence an agent sends.
func TestApplyReportsMatchesOneByOne(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		m := newMachine(t, url)
		ctx := context.Background()
		code0, code3 := 0, 3
		type step struct {
			svc  string
			kind jobs.ReportKind
			end  jobs.ServiceEnd
		}
		for _, tc := range []struct {
			name     string
			services []string
			steps    []step
		}{
			{"one service exits", []string{"main"}, []step{
				{"main", jobs.ReportStarting, jobs.ServiceEnd{}}, {"main", jobs.ReportRunning, jobs.ServiceEnd{}},
				{"main", jobs.ReportEnded, jobs.ServiceEnd{ExitCode: &code0}}}},
			{"one service fails", []string{"main"}, []step{
				{"main", jobs.ReportRunning, jobs.ServiceEnd{}},
				{"main", jobs.ReportEnded, jobs.ServiceEnd{ExitCode: &code3, Failed: true, Reason: "exit 3"}}}},
			{"two services exit", []string{"a", "b"}, []step{
				{"a", jobs.ReportRunning, jobs.ServiceEnd{}}, {"b", jobs.ReportRunning, jobs.ServiceEnd{}},
				{"a", jobs.ReportEnded, jobs.ServiceEnd{ExitCode: &code0}}, {"b", jobs.ReportEnded, jobs.ServiceEnd{ExitCode: &code0}}}},
			{"one of two fails, the other is stopped", []string{"a", "b"}, []step{
				{"a", jobs.ReportRunning, jobs.ServiceEnd{}}, {"b", jobs.ReportRunning, jobs.ServiceEnd{}},
				{"a", jobs.ReportEnded, jobs.ServiceEnd{ExitCode: &code3, Failed: true, Reason: "exit 3"}},
				{"b", jobs.ReportEnded, jobs.ServiceEnd{Failed: true, Reason: "stopped"}}}},
			{"both end before the second runs", []string{"a", "b"}, []step{
				{"a", jobs.ReportRunning, jobs.ServiceEnd{}}, {"a", jobs.ReportEnded, jobs.ServiceEnd{ExitCode: &code0}},
				{"b", jobs.ReportEnded, jobs.ServiceEnd{ExitCode: &code0}}}},
			{"repeated reports", []string{"main"}, []step{
				{"main", jobs.ReportRunning, jobs.ServiceEnd{}}, {"main", jobs.ReportRunning, jobs.ServiceEnd{}},
				{"main", jobs.ReportEnded, jobs.ServiceEnd{ExitCode: &code0}}, {"main", jobs.ReportEnded, jobs.ServiceEnd{ExitCode: &code0}}}},
		} {
			t.Run(tc.name, func(t *testing.T) {
				one, batched := m.placedServices(t, tc.services...), m.placedServices(t, tc.services...)
				var reports []jobs.Report
				var doneOne []string
				for i, st := range tc.steps {
					at := m.start.Add(time.Duration(i) * time.Minute)
					ref := jobs.ServiceRef{JobID: one, Service: st.svc, NodeID: m.node, Attempt: 1}
					var err error
					switch st.kind {
					case jobs.ReportStarting:
						_, err = m.js.OwnService(ctx, ref)
					case jobs.ReportRunning:
						err = m.js.ServiceRunning(ctx, ref, nil, at)
					case jobs.ReportEnded:
						var done bool
						done, err = m.js.ServiceEnded(ctx, ref, st.end, at)
						if done {
							doneOne = append(doneOne, "JOB")
						}
					}
					if err != nil {
						t.Fatal(err)
					}
					ref.JobID = batched
					reports = append(reports, jobs.Report{Ref: ref, Kind: st.kind, End: st.end, At: at})
				}
				done, err := m.js.ApplyReports(ctx, reports)
				if err != nil {
					t.Fatal(err)
				}
				for i := range done {
					done[i] = "JOB"
				}
				if strings.Join(done, ",") != strings.Join(doneOne, ",") {
					t.Errorf("done = %v, one by one %v", done, doneOne)
				}
				if a, b := exitCodes(t, m, one), exitCodes(t, m, batched); a != b {
					t.Errorf("exit codes %s, one by one %s", b, a)
				}
				if a, b := m.history(t, one), m.history(t, batched); a != b {
					t.Fatalf("one by one:\n%s\nbatched:\n%s", a, b)
				}
			})
		}
	})
}

// In a batch, a late report of an attempt the job was requeued from
// changes nothing, while the other reports of the batch apply.
func TestApplyReportsIgnoresOldAttempt(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		m := newMachine(t, url)
		ctx := context.Background()
		old := m.placedWith(t, 1)
		if err := m.js.ServiceRunning(ctx, m.ref(old, 1), nil, m.start); err != nil {
			t.Fatal(err)
		}
		if requeued, err := m.js.NodeLost(ctx, old, m.start.Add(time.Minute)); err != nil || !requeued {
			t.Fatalf("NodeLost = %v, %v; want a requeue", requeued, err)
		}
		other := m.running(t)
		before := m.snapshot(t, old)
		at := m.start.Add(2 * time.Minute)
		done, err := m.js.ApplyReports(ctx, []jobs.Report{
			{Ref: m.ref(old, 1), Kind: jobs.ReportRunning, At: at},
			{Ref: m.ref(old, 1), Kind: jobs.ReportEnded, End: jobs.ServiceEnd{Failed: true, Reason: "late"}, At: at},
			{Ref: m.ref(other, 1), Kind: jobs.ReportEnded, At: at},
		})
		if err != nil {
			t.Fatal(err)
		}
		if len(done) != 1 || done[0] != other {
			t.Fatalf("done = %v, want [%s]", done, other)
		}
		if after := m.snapshot(t, old); volatile.ReplaceAllString(after, "") != volatile.ReplaceAllString(before, "") {
			t.Fatalf("a late report of attempt 1 wrote:\nbefore:\n%s\nafter:\n%s", before, after)
		}
		j, err := m.tn.DB.Ent.Job.Get(fixture.Sys(), other)
		if err != nil {
			t.Fatal(err)
		}
		if j.Status != "COMPLETE" {
			t.Fatalf("the other job is %s, want COMPLETE", j.Status)
		}
	})
}

func exitCodes(t *testing.T, m *machine, id string) string {
	t.Helper()
	svcs, err := m.tn.DB.Ent.Service.Query().Where(service.JobID(id)).Order(service.ByName()).All(fixture.Sys())
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, s := range svcs {
		if s.ExitCode == nil {
			b.WriteString("nil ")
		} else {
			fmt.Fprintf(&b, "%d ", *s.ExitCode)
		}
	}
	return b.String()
}

// A batch of reports that starts and ends a job wakes its followers, the
// job's subscribers, its queue's scheduler and the nodes of its services
// (here two), with what its transaction read: no read after the commit.
func TestReportsSignalTheJobsFollowers(t *testing.T) {
	t.Parallel()
	m := newMachine(t, dbtest.SQLiteURL(t))
	bus := notify.New(nil, fixture.Log())
	t.Cleanup(bus.Close)
	m.js.Bus = bus
	other := m.tn.AddNode(t, fixture.Node{Name: "n2", Queues: []string{m.tn.DefaultQueue}}).ID
	id := m.placedServices(t, "a", "b")
	if err := m.tn.DB.Ent.Service.Update().Where(service.JobID(id), service.Name("b")).SetNodeID(other).Exec(fixture.Sys()); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, step := range []struct {
		name    string
		reports []jobs.Report
	}{
		{"started", []jobs.Report{
			{Ref: jobs.ServiceRef{JobID: id, Service: "a", NodeID: m.node, Attempt: 1}, Kind: jobs.ReportRunning, At: m.start},
			{Ref: jobs.ServiceRef{JobID: id, Service: "b", NodeID: other, Attempt: 1}, Kind: jobs.ReportRunning, At: m.start},
		}},
		{"ended", []jobs.Report{
			{Ref: jobs.ServiceRef{JobID: id, Service: "a", NodeID: m.node, Attempt: 1}, Kind: jobs.ReportEnded, End: jobs.ServiceEnd{Failed: true, Reason: "exit 3"}, At: m.start.Add(time.Minute)},
		}},
	} {
		woken := map[string]<-chan struct{}{}
		for topic, key := range map[string]string{notify.TopicJob: id, notify.TopicQueue: m.tn.DefaultQueue, notify.TopicNode + " n1": m.node, notify.TopicNode + " n2": other} {
			ch, stop := bus.Subscribe(strings.Fields(topic)[0], key)
			t.Cleanup(stop)
			woken[topic] = ch
		}
		since, err := m.tn.DB.Mark(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := m.js.ApplyReports(ctx, step.reports); err != nil {
			t.Fatal(err)
		}
		for topic, ch := range woken {
			select {
			case <-ch:
			case <-time.After(5 * time.Second):
				t.Errorf("%s: %s not signalled", step.name, topic)
			}
		}
		stmts, err := since(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, q := range stmts {
			if strings.Contains(q, "`jobs`.`queue_id` FROM `jobs`") {
				t.Errorf("%s: the signal read the job again: %s", step.name, q)
			}
		}
	}
}

// The usual end of a job, its running service's exit, reads neither the
// service before updating it (the update finds it by job and name) nor
// the job again after ending it (its event takes the tenant and
// environment from what settling it read). Not parallel: it counts the
// process's statements.
func TestServiceEndReadsLittle(t *testing.T) {
	m := newMachine(t, dbtest.SQLiteURL(t))
	id := m.placedServices(t, "a")
	ref := jobs.ServiceRef{JobID: id, Service: "a", NodeID: m.node, Attempt: 1}
	ctx := context.Background()
	if _, err := m.js.ApplyReports(ctx, []jobs.Report{{Ref: ref, Kind: jobs.ReportRunning, At: m.start}}); err != nil {
		t.Fatal(err)
	}
	since, err := m.tn.DB.Mark(ctx)
	if err != nil {
		t.Fatal(err)
	}
	before := testutil.ToFloat64(metrics.DatabaseStatements)
	done, err := m.js.ApplyReports(ctx, []jobs.Report{{Ref: ref, Kind: jobs.ReportEnded, At: m.start.Add(90 * time.Second)}})
	if err != nil {
		t.Fatal(err)
	}
	n := testutil.ToFloat64(metrics.DatabaseStatements) - before
	stmts, err := since(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range stmts {
		if strings.HasPrefix(q, "SELECT `services`.`id`, `services`.`status` FROM `services`") {
			t.Errorf("the end read the service first: %s", q)
		}
	}
	// The service's update; the job and its services read, the job and
	// its services ended, its event; the meter's read of the job, the
	// tenant's budget policy, the payer's balance and what its running
	// jobs hold, the charge and the job's progress. (The queue's
	// scheduling pass is stubbed here.) A new statement here costs every
	// job: count it in, or do without it.
	if n > 12 {
		t.Errorf("the end of a job took %v statements, want at most 12:\n%s", n, strings.Join(stmts, "\n"))
	}
	j := m.tn.DB.Ent.Job.GetX(fixture.Sys(), id)
	if len(done) != 1 || j.Status != job.StatusComplete || j.MeteredMinutes != 2 {
		t.Errorf("done %v, job %s after %d minutes metered", done, j.Status, j.MeteredMinutes)
	}
	evs := m.tn.DB.Ent.JobEvent.Query().Where(jobevent.JobID(id), jobevent.StatusEQ(jobevent.StatusComplete)).AllX(fixture.Sys())
	if len(evs) != 1 || evs[0].TenantID != j.TenantID || evs[0].EnvironmentID != j.EnvironmentID {
		t.Errorf("the end's events: %+v", evs)
	}
}

// The running report that starts a job moves no other service: every one
// has its start recorded already. A new statement here costs every job.
func TestJobStartReadsLittle(t *testing.T) {
	m := newMachine(t, dbtest.SQLiteURL(t))
	id := m.placedServices(t, "a", "b")
	ctx := context.Background()
	ref := func(name string) jobs.ServiceRef {
		return jobs.ServiceRef{JobID: id, Service: name, NodeID: m.node, Attempt: 1}
	}
	if _, err := m.js.ApplyReports(ctx, []jobs.Report{{Ref: ref("a"), Kind: jobs.ReportRunning, At: m.start}}); err != nil {
		t.Fatal(err)
	}
	since, err := m.tn.DB.Mark(ctx)
	if err != nil {
		t.Fatal(err)
	}
	before := testutil.ToFloat64(metrics.DatabaseStatements)
	if _, err := m.js.ApplyReports(ctx, []jobs.Report{{Ref: ref("b"), Kind: jobs.ReportRunning, At: m.start.Add(time.Second)}}); err != nil {
		t.Fatal(err)
	}
	n := testutil.ToFloat64(metrics.DatabaseStatements) - before
	stmts, err := since(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// The service's update and the count of those not started; the job's
	// update, the job and its services read, its event; the meter's read
	// of the queue's prices and the job's rates; the start fee: the
	// payer's running jobs, balance and budget policy, and the charge.
	if n > 12 {
		t.Errorf("the start of a job took %v statements, want at most 12:\n%s", n, strings.Join(stmts, "\n"))
	}
	j := m.tn.DB.Ent.Job.GetX(fixture.Sys(), id)
	if j.Status != job.StatusRunning || j.StartedAt == nil {
		t.Fatalf("job %s, started %v", j.Status, j.StartedAt)
	}
	for _, s := range m.tn.DB.Ent.Service.Query().Where(service.JobID(id)).AllX(fixture.Sys()) {
		if s.Status != service.StatusRunning || s.StartedAt == nil {
			t.Errorf("service %s: %s, started %v", s.Name, s.Status, s.StartedAt)
		}
	}
}
