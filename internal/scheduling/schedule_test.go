package scheduling

import (
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
	"time"
)

func ids(placed []Placement) []string {
	out := []string{}
	for _, p := range placed {
		out = append(out, p.JobID)
	}
	return out
}

func TestScheduleOrder(t *testing.T) {
	t.Parallel()
	one := []Node{node("n1", 4, 4096, nil)} // room for one 4-CPU job
	big := svc("s", 4, 1, 0)
	for _, tc := range []struct {
		name   string
		jobs   []Job
		placed []string
	}{
		{"higher priority first, even if submitted later", []Job{
			withPriority(job("early", big), 0, 0), withPriority(job("urgent", big), 5, time.Hour)}, []string{"urgent"}},
		{"then earlier submit", []Job{
			withPriority(job("a-late", big), 1, time.Hour), withPriority(job("b-early", big), 1, time.Minute)}, []string{"b-early"}},
		{"then ID", []Job{withPriority(job("j2", big), 1, 0), withPriority(job("j1", big), 1, 0)}, []string{"j1"}},
		{"negative priority last", []Job{withPriority(job("low", big), -1, 0), withPriority(job("normal", big), 0, time.Hour)}, []string{"normal"}},
		// Greedy with backfill: the big job waits, later small ones run.
		{"backfill behind a waiting job", []Job{
			withPriority(job("huge", svc("s", 8, 1, 0)), 9, 0),
			withPriority(job("small-1", svc("s", 2, 1, 0)), 0, time.Minute),
			withPriority(job("small-2", svc("s", 2, 1, 0)), 0, 2*time.Minute),
			withPriority(job("small-3", svc("s", 2, 1, 0)), 0, 3*time.Minute)}, []string{"small-1", "small-2"}},
		{"placed in scheduling order", []Job{
			withPriority(job("c", svc("s", 1, 1, 0)), 0, 0),
			withPriority(job("a", svc("s", 1, 1, 0)), 2, 0),
			withPriority(job("b", svc("s", 1, 1, 0)), 1, 0)}, []string{"a", "b", "c"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			placed, waiting, err := Schedule(tc.jobs, one)
			if err != nil {
				t.Fatal(err)
			}
			if got := ids(placed); !slices.Equal(got, tc.placed) {
				t.Fatalf("placed %v, want %v", got, tc.placed)
			}
			if len(placed)+len(waiting) != len(tc.jobs) {
				t.Fatalf("%d placed + %d waiting != %d jobs", len(placed), len(waiting), len(tc.jobs))
			}
			for id, r := range waiting {
				if r.Kind == 0 || r.String("q") == "" {
					t.Errorf("job %s waits without a reason", id)
				}
			}
		})
	}
}

func TestScheduleUpdatesUsage(t *testing.T) {
	t.Parallel()
	nodes := []Node{node("n1", 8, 8192, gpus{"H100": 4})}
	jobs := []Job{job("a", svc("s", 3, 1024, 2, "H100")), job("b", svc("s", 3, 1024, 2, "H100")), job("c", svc("s", 1, 1024, 1, "H100"))}
	placed, waiting, err := Schedule(jobs, nodes)
	if err != nil {
		t.Fatal(err)
	}
	if got := ids(placed); !slices.Equal(got, []string{"a", "b"}) {
		t.Fatalf("placed %v", got)
	}
	want := "waiting for 1 free H100 in queue gpu: 0 of 1 node has them"
	if got := waiting["c"].String("gpu"); got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
}

func TestScheduleLeavesInputAlone(t *testing.T) {
	t.Parallel()
	nodes, jobs := randomInput(rand.New(rand.NewPCG(7, 7)))
	nodesBefore, jobsBefore := deepCopyNodes(nodes), slices.Clone(jobs)
	if _, _, err := Schedule(jobs, nodes); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(nodes, nodesBefore) || !reflect.DeepEqual(jobs, jobsBefore) {
		t.Fatal("Schedule changed its input")
	}
}

// Results depend on values, not on where they sit in the slices.
func TestScheduleDeterministic(t *testing.T) {
	t.Parallel()
	for seed := range uint64(20) {
		rng := rand.New(rand.NewPCG(seed, 1))
		nodes, jobs := randomInput(rng)
		placed, waiting, err := Schedule(jobs, nodes)
		if err != nil {
			t.Fatal(err)
		}
		for range 3 {
			n2, j2 := deepCopyNodes(nodes), slices.Clone(jobs)
			rng.Shuffle(len(n2), func(i, j int) { n2[i], n2[j] = n2[j], n2[i] })
			rng.Shuffle(len(j2), func(i, j int) { j2[i], j2[j] = j2[j], j2[i] })
			p2, w2, err := Schedule(j2, n2)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(placed, p2) || !reflect.DeepEqual(waiting, w2) {
				t.Fatalf("seed %d: shuffled input gave a different schedule", seed)
			}
		}
	}
}

func TestScheduleEmpty(t *testing.T) {
	t.Parallel()
	placed, waiting, err := Schedule(nil, nil)
	if err != nil || len(placed) != 0 || len(waiting) != 0 {
		t.Fatalf("got %v %v %v", placed, waiting, err)
	}
	_, waiting, err = Schedule([]Job{job("j", svc("s", 1, 1, 0))}, nil)
	if err != nil || waiting["j"].Kind != NoNodes {
		t.Fatalf("got %v %v", waiting, err)
	}
}

func TestScheduleRejectsDuplicateJobs(t *testing.T) {
	t.Parallel()
	j := job("j", svc("s", 1, 1, 0))
	if _, _, err := Schedule([]Job{j, j}, []Node{node("n", 4, 4, nil)}); err == nil {
		t.Fatal("duplicate job IDs accepted")
	}
}
