package jobstate

import (
	"strings"

	"entgo.io/ent/dialect/sql"

	"github.com/levers9/levers9/ent/job"
	"github.com/levers9/levers9/ent/predicate"
)

// In matches the jobs in one of states, as job.StatusIn does, but with the
// states written into the statement instead of passed as parameters. For
// statements that run every few seconds whatever the load: PostgreSQL
// plans such a statement once for any parameter (a generic plan), for an
// average status, and the average status is an ended one, most jobs'; so
// the plan read every job ever run (BenchmarkHistory). The states are the
// enum's own constants: nothing a caller supplies reaches the text.
func In(states ...job.Status) predicate.Job {
	quoted := make([]string, len(states))
	for i, st := range states {
		quoted[i] = "'" + strings.ReplaceAll(string(st), "'", "''") + "'"
	}
	list := strings.Join(quoted, ", ")
	return predicate.Job(func(s *sql.Selector) {
		s.Where(sql.ExprP(s.C(job.FieldStatus) + " IN (" + list + ")"))
	})
}

// Live is In with the states of jobs that have not ended.
func Live() predicate.Job {
	var live []job.Status
	for _, st := range JobStates {
		if !Ended(st) {
			live = append(live, st)
		}
	}
	return In(live...)
}
