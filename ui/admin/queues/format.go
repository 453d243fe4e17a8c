package queues

import (
	"fmt"
	"strings"
	"time"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/ent/queue"
	"github.com/levers9/levers9/internal/queues"
	"github.com/levers9/levers9/ui/components"
)

var modes = []components.Option{
	{Value: string(queue.ModeBoth), Label: "interactive and batch"},
	{Value: string(queue.ModeInteractive), Label: "interactive only"},
	{Value: string(queue.ModeBatch), Label: "batch only"},
}

func action(q *ent.Queue) string {
	if q == nil {
		return "/admin/queues"
	}
	return "/admin/queues/" + q.ID
}

// row is one queue of the list, formatted.
type row struct {
	ID, Name, Mode, Limits, Prices string
	IdleStop                       string
	Nodes, Storages, Groups        string
}

// describe formats q, whose nodes, storages and groups are loaded.
func describe(q *ent.Queue) row {
	return row{ID: q.ID, Name: q.Name, Mode: string(q.Mode), Limits: limits(q), IdleStop: idleStop(q.IdleTimeoutSeconds), Prices: queues.Prices(q),
		Nodes: nodeNames(q), Storages: storageNames(q), Groups: groupNames(q)}
}

func limits(q *ent.Queue) string {
	return fmt.Sprintf("%d GPUs, %g CPUs, %d MiB; a service naming none gets %g CPU, %d MiB",
		q.MaxGpusPerJob, q.MaxCPUPerJob, q.MaxMemoryMibPerJob, q.DefaultCPU, q.DefaultMemoryMib)
}

// idleStop says when a queue's idle interactive jobs stop: "after 30m",
// "after 2d", "never".
func idleStop(seconds int) string {
	d := time.Duration(seconds) * time.Second
	switch {
	case d <= 0:
		return "never"
	case d%(24*time.Hour) == 0:
		return fmt.Sprintf("after %dd", d/(24*time.Hour))
	case d%time.Hour == 0:
		return fmt.Sprintf("after %dh", d/time.Hour)
	case d%time.Minute == 0:
		return fmt.Sprintf("after %dm", d/time.Minute)
	}
	return "after " + d.String()
}

func nodeNames(q *ent.Queue) string {
	var out []string
	for _, n := range q.Edges.Nodes {
		out = append(out, n.Name)
	}
	return joinOr(out)
}

func storageNames(q *ent.Queue) string {
	var out []string
	for _, s := range q.Edges.Storages {
		out = append(out, s.Name)
	}
	return joinOr(out)
}

func groupNames(q *ent.Queue) string {
	var out []string
	for _, g := range q.Edges.Groups {
		out = append(out, g.Name)
	}
	return joinOr(out)
}

func joinOr(names []string) string {
	if len(names) == 0 {
		return "—"
	}
	return strings.Join(names, ", ")
}
