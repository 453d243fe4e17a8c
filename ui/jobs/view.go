package jobs

import (
	"strconv"
	"time"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/internal/billing"
	"github.com/levers9/levers9/ui/components"
)

// jobView is a job as its pages show it, formatted.
type jobView struct {
	ID, Name             string // Name is the ID when the job has none
	Status, StatusReason string
	Queue, Project       string
	GPUs, Started, Took  string
	Services             []serviceView
}

// serviceView is one service of a job, formatted.
type serviceView struct {
	ID, Name, Status, GPUs string
}

// describeJob formats j; its queue and project edges are read when loaded,
// its services are given.
func describeJob(j *ent.Job, services []*ent.Service, now time.Time) jobView {
	jv := jobView{ID: j.ID, Name: displayName(j), Status: string(j.Status), StatusReason: j.StatusReason,
		GPUs: strconv.Itoa(j.Gpus), Started: components.When(j.StartedAt), Took: components.Took(j.StartedAt, j.FinishedAt, now)}
	if j.Edges.Queue != nil {
		jv.Queue = j.Edges.Queue.Name
	}
	if j.Edges.Project != nil {
		jv.Project = j.Edges.Project.Name
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
	return row{Job: describeJob(j, services, now), Tokens: spent.String()}
}

func displayName(j *ent.Job) string {
	if j.Name != "" {
		return j.Name
	}
	return j.ID
}
