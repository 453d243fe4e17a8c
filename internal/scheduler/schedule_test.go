package scheduler_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/levers9/levers9/ent/job"
	"github.com/levers9/levers9/ent/service"
	"github.com/levers9/levers9/internal/dbtest"
)

const gib = 1024

// placedOn says where a job went: "" while unplaced, else the node's name,
// then the GPU type of its GPU services if any ("gpu-1 H100").
func (f *world) placedOn(t *testing.T, jobID string) string {
	t.Helper()
	svcs, err := f.db.Ent.Service.Query().Where(service.JobID(jobID)).WithNode().All(f.sys)
	if err != nil {
		t.Fatal(err)
	}
	where := map[string]bool{}
	for _, s := range svcs {
		w := ""
		if s.Edges.Node != nil {
			w = s.Edges.Node.Name
			if s.Gpus > 0 {
				w += " " + s.GpuType
			}
		}
		where[w] = true
	}
	if len(where) != 1 {
		t.Fatalf("job %s is split: %v", jobID, where)
	}
	for w := range where {
		return w
	}
	return ""
}

func (f *world) reason(t *testing.T, jobID string) string {
	t.Helper()
	j, err := f.db.Ent.Job.Get(f.sys, jobID)
	if err != nil {
		t.Fatal(err)
	}
	if j.Status != job.StatusPending {
		t.Fatalf("job %s is %s, want still PENDING", jobID, j.Status)
	}
	return j.StatusReason
}

func cpuJob(q string, cpu float64, mem int64) jobSpec {
	return jobSpec{queue: q, created: t0, services: []svc{{cpu: cpu, mem: mem}}}
}

func TestScheduleQueue(t *testing.T) {
	t.Parallel()
	h100 := map[string]int{"H100": 1}
	cases := []struct {
		name   string
		placed int
		// setup seeds nodes and jobs and returns the jobs by label.
		setup func(t *testing.T, f *world) map[string]string
		// want is per label the node (and GPU type) or, for a waiting job,
		// "wait: " and a part of its reason.
		want map[string]string
	}{
		{
			name: "fits", placed: 1,
			setup: func(t *testing.T, f *world) map[string]string {
				f.addNode(t, "n1", inv(8, 16*gib, nil), true, f.queue)
				ids := f.addJobs(t, []jobSpec{{queue: f.queue, created: t0, services: []svc{{cpu: 2, mem: gib}, {cpu: 2, mem: gib}}}})
				return map[string]string{"a": ids[0]}
			},
			want: map[string]string{"a": "n1"},
		},
		{
			name: "too large and no room", placed: 1,
			setup: func(t *testing.T, f *world) map[string]string {
				f.addNode(t, "n1", inv(8, 16*gib, nil), true, f.queue)
				ids := f.addJobs(t, []jobSpec{cpuJob(f.queue, 16, gib), cpuJob(f.queue, 6, gib), cpuJob(f.queue, 6, gib)})
				return map[string]string{"huge": ids[0], "first": ids[1], "second": ids[2]}
			},
			want: map[string]string{
				"huge":   "wait: no online node in queue default is large enough",
				"first":  "n1",
				"second": "wait: waiting for 6 CPUs in queue default",
			},
		},
		{
			name: "no online nodes",
			setup: func(t *testing.T, f *world) map[string]string {
				f.addNode(t, "off", inv(64, 64*gib, nil), false, f.queue)
				f.addNode(t, "elsewhere", inv(64, 64*gib, nil), true)
				return map[string]string{"a": f.addJobs(t, []jobSpec{cpuJob(f.queue, 1, gib)})[0]}
			},
			want: map[string]string{"a": "wait: queue default has no online nodes"},
		},
		{
			name: "best fit", placed: 1,
			setup: func(t *testing.T, f *world) map[string]string {
				f.addNode(t, "big", inv(64, 256*gib, nil), true, f.queue)
				f.addNode(t, "small", inv(8, 16*gib, nil), true, f.queue)
				return map[string]string{"a": f.addJobs(t, []jobSpec{cpuJob(f.queue, 4, 8*gib)})[0]}
			},
			want: map[string]string{"a": "small"},
		},
		{
			name: "priority then age", placed: 1,
			setup: func(t *testing.T, f *world) map[string]string {
				f.addNode(t, "n1", inv(8, 16*gib, nil), true, f.queue)
				old, urgent, older := cpuJob(f.queue, 6, gib), cpuJob(f.queue, 6, gib), cpuJob(f.queue, 6, gib)
				urgent.priority, urgent.created = 5, t0.Add(time.Hour)
				older.created = t0.Add(-time.Hour)
				ids := f.addJobs(t, []jobSpec{old, urgent, older})
				return map[string]string{"old": ids[0], "urgent": ids[1], "older": ids[2]}
			},
			want: map[string]string{"urgent": "n1", "old": "wait: waiting for", "older": "wait: waiting for"},
		},
		{
			name: "GPU preference", placed: 2,
			setup: func(t *testing.T, f *world) map[string]string {
				f.addNode(t, "h", inv(32, 64*gib, h100), true, f.queue)
				f.addNode(t, "a", inv(32, 64*gib, map[string]int{"A100": 4}), true, f.queue)
				pair := jobSpec{queue: f.queue, created: t0, services: []svc{{cpu: 1, mem: gib, gpus: 2, types: []string{"H100", "A100"}}}}
				one := jobSpec{queue: f.queue, created: t0.Add(time.Second), services: []svc{{cpu: 1, mem: gib, gpus: 1, types: []string{"H100", "A100"}}}}
				ids := f.addJobs(t, []jobSpec{pair, one})
				return map[string]string{"pair": ids[0], "one": ids[1]}
			},
			want: map[string]string{"pair": "a A100", "one": "h H100"},
		},
		{
			name: "GPUs of a type nobody has free",
			setup: func(t *testing.T, f *world) map[string]string {
				n := f.addNode(t, "h", inv(32, 64*gib, h100), true, f.queue)
				f.addRunning(t, f.queue, n, svc{cpu: 1, mem: gib, gpus: 1, types: []string{"H100"}}, "H100")
				j := jobSpec{queue: f.queue, created: t0, services: []svc{{cpu: 1, mem: gib, gpus: 1, types: []string{"H100"}}}}
				return map[string]string{"a": f.addJobs(t, []jobSpec{j})[0]}
			},
			want: map[string]string{"a": "wait: waiting for 1 free H100 in queue default: 0 of 1 node has them"},
		},
		{
			name: "capacity used from another queue", placed: 1,
			setup: func(t *testing.T, f *world) map[string]string {
				other := f.addQueue(t, "other")
				shared := f.addNode(t, "shared", inv(8, 16*gib, nil), true, f.queue, other)
				f.addNode(t, "mine", inv(16, 32*gib, nil), true, f.queue)
				f.addRunning(t, other, shared, svc{cpu: 6, mem: gib}, "")
				// Best fit would pick shared were it idle.
				return map[string]string{"a": f.addJobs(t, []jobSpec{cpuJob(f.queue, 4, gib)})[0]}
			},
			want: map[string]string{"a": "mine"},
		},
		{
			name: "placed but not started still counts",
			setup: func(t *testing.T, f *world) map[string]string {
				f.addNode(t, "n1", inv(8, 16*gib, nil), true, f.queue)
				ids := f.addJobs(t, []jobSpec{cpuJob(f.queue, 6, gib)})
				if _, err := f.scheduler(f.db).ScheduleQueue(context.Background(), f.queue); err != nil {
					t.Fatal(err)
				}
				ids = append(ids, f.addJobs(t, []jobSpec{cpuJob(f.queue, 6, gib)})...)
				return map[string]string{"first": ids[0], "second": ids[1]}
			},
			want: map[string]string{"first": "n1", "second": "wait: waiting for 6 CPUs"},
		},
		{
			name: "ended jobs free their node", placed: 1,
			setup: func(t *testing.T, f *world) map[string]string {
				n := f.addNode(t, "n1", inv(8, 16*gib, nil), true, f.queue)
				done := f.addRunning(t, f.queue, n, svc{cpu: 8, mem: gib}, "")
				if err := f.db.Ent.Service.Update().Where(service.JobID(done)).SetStatus(service.StatusComplete).Exec(f.sys); err != nil {
					t.Fatal(err)
				}
				return map[string]string{"a": f.addJobs(t, []jobSpec{cpuJob(f.queue, 8, gib)})[0]}
			},
			want: map[string]string{"a": "n1"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dbtest.Each(t, func(t *testing.T, url string) {
				f := newFixture(t, url)
				jobs := tc.setup(t, f)
				placed, err := f.scheduler(f.db).ScheduleQueue(context.Background(), f.queue)
				if err != nil {
					t.Fatal(err)
				}
				if placed != tc.placed {
					t.Errorf("placed %d jobs, want %d", placed, tc.placed)
				}
				for label, want := range tc.want {
					id := jobs[label]
					got, reason := f.placedOn(t, id), f.reason(t, id)
					if wait, ok := strings.CutPrefix(want, "wait: "); ok {
						if got != "" || !strings.Contains(reason, wait) {
							t.Errorf("%s: on %q, reason %q; want waiting with %q", label, got, reason, wait)
						}
						continue
					}
					node, _, _ := strings.Cut(want, " ")
					if got != want || reason != "starting on node "+node {
						t.Errorf("%s: on %q, reason %q; want on %q", label, got, reason, want)
					}
				}
			})
		})
	}
}

// A second pass over an unchanged queue writes nothing.
func TestScheduleQueueIdempotent(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		f := newFixture(t, url)
		f.addNode(t, "n1", inv(8, 16*gib, nil), true, f.queue)
		ids := f.addJobs(t, []jobSpec{cpuJob(f.queue, 6, gib), cpuJob(f.queue, 6, gib)})
		s := f.scheduler(f.db)
		if n, err := s.ScheduleQueue(context.Background(), f.queue); err != nil || n != 1 {
			t.Fatalf("first pass = %d, %v", n, err)
		}
		before, err := f.db.Ent.Job.Get(f.sys, ids[1])
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(10 * time.Millisecond)
		if n, err := s.ScheduleQueue(context.Background(), f.queue); err != nil || n != 0 {
			t.Fatalf("second pass = %d, %v", n, err)
		}
		after, err := f.db.Ent.Job.Get(f.sys, ids[1])
		if err != nil {
			t.Fatal(err)
		}
		if !after.UpdatedAt.Equal(before.UpdatedAt) || after.StatusReason != before.StatusReason {
			t.Fatalf("waiting job rewritten: %v %q → %v %q", before.UpdatedAt, before.StatusReason, after.UpdatedAt, after.StatusReason)
		}
		if n, err := s.ScheduleQueue(context.Background(), "que_missing"); err != nil || n != 0 {
			t.Fatalf("pass over a missing queue = %d, %v", n, err)
		}
	})
}
