package metering

import (
	"entgo.io/ent/dialect/sql"

	"github.com/levers9/levers9/ent/job"
	"github.com/levers9/levers9/ent/predicate"
)

// meteringOpen matches the jobs whose metering is not closed, written as
// "metering_closed = false": ent writes MeteringClosed(false) as "NOT
// metering_closed", which no index serves, so the meter's every tick and
// each payer's held minutes read every job ever run
// (TestMeterReadsNoHistory). The (metering_closed, started_at) index
// serves this form.
func meteringOpen() predicate.Job {
	return predicate.Job(func(s *sql.Selector) {
		s.Where(sql.ExprP(s.C(job.FieldMeteringClosed) + " = false"))
	})
}
