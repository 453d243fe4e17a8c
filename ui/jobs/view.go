package jobs

import (
	"strconv"
	"time"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/internal/billing"
	"github.com/levers9/levers9/internal/jobs"
	"github.com/levers9/levers9/internal/ledger"
	"github.com/levers9/levers9/ui/components"
)

// jobView is a job as its pages show it, formatted.
type jobView struct {
	ID, Name             string // Name is the ID when the job has none
	Status, StatusReason string
	Queue, Project       string
	// Owner is the email of who submitted it ("—" when the viewer may not
	// see that user).
	Owner               string
	GPUs, Started, Took string
	// Since is the start as RFC 3339 while the job runs, for the page's
	// script to count the duration on; empty otherwise.
	Since    string
	Ended    bool
	Services []serviceView
}

// serviceView is one service of a job, formatted.
type serviceView struct {
	ID, Name, Status, GPUs string
}

// describeJob formats j; its queue, project and owner edges are read when
// loaded, its services are given.
func describeJob(j *ent.Job, services []*ent.Service, now time.Time) jobView {
	jv := jobView{ID: j.ID, Name: displayName(j), Status: string(j.Status), StatusReason: j.StatusReason,
		GPUs: strconv.Itoa(j.Gpus), Started: components.When(j.StartedAt), Took: components.Took(j.StartedAt, j.FinishedAt, now),
		Owner: "—", Ended: jobs.Ended(j.Status)}
	if j.StartedAt != nil && j.FinishedAt == nil && !jv.Ended {
		jv.Since = j.StartedAt.UTC().Format(time.RFC3339)
	}
	if j.Edges.Queue != nil {
		jv.Queue = j.Edges.Queue.Name
	}
	if j.Edges.Project != nil {
		jv.Project = j.Edges.Project.Name
	}
	if j.Edges.Owner != nil {
		jv.Owner = j.Edges.Owner.Email
	}
	for _, s := range services {
		jv.Services = append(jv.Services, serviceView{ID: s.ID, Name: s.Name, Status: string(s.Status), GPUs: strconv.Itoa(s.Gpus)})
	}
	return jv
}

// row is one job of the table.
type row struct {
	Job    jobView
	Tokens string // spent so far
}

func newRow(j *ent.Job, services []*ent.Service, spent billing.Tokens, now time.Time) row {
	return row{Job: describeJob(j, services, now), Tokens: spentText(spent)}
}

// spentText is what a job cost so far, never a negative number: a job
// whose refunds outweigh its charges says so in words.
func spentText(t billing.Tokens) string {
	e := ledger.EntryOf(t)
	if e.Direction == ledger.Credit {
		return ledger.Plain(e.Amount) + " refunded"
	}
	return ledger.Plain(e.Amount)
}

func displayName(j *ent.Job) string {
	if j.Name != "" {
		return j.Name
	}
	return j.ID
}
