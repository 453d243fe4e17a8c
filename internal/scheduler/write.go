package scheduler

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"entgo.io/ent/dialect"

	"github.com/levers9/levers9/ent/job"
	"github.com/levers9/levers9/ent/service"
	"github.com/levers9/levers9/internal/jobs/jobstate"
	"github.com/levers9/levers9/internal/scheduling"
)

// ErrRaced means another writer changed a job or service this pass meant to
// place; the pass rolls back and its River job retries on fresh data.
var ErrRaced = errors.New("jobs changed during the pass")

// write stores placements and changed waiting reasons, each as a few
// multi-row updates: a pass over 10,000 jobs writes thousands of rows with
// different values, one statement per row or per group costs seconds.
func (st *state) write(ctx context.Context, tx *sql.Tx, dialectName, queueName string, placed []scheduling.Placement, waiting map[string]scheduling.Reason, now time.Time) error {
	if dialectName == dialect.Postgres {
		// The reads are done. Forced custom plans (ScheduleQueue) would also
		// replan the foreign key check of every service placed, a cached
		// query run once per row: half the time of placing 10,000 services.
		if _, err := tx.ExecContext(ctx, "SET LOCAL plan_cache_mode TO DEFAULT"); err != nil {
			return fmt.Errorf("restoring plan cache mode: %w", err)
		}
	}
	starting := make([]row, 0, len(placed))
	var services []row
	for _, p := range placed {
		starting = append(starting, row{p.JobID, []any{scheduling.StartingPrefix + st.nodeName[p.NodeID]}})
		for name, id := range st.services[p.JobID] {
			devices, err := jsonList(p.Devices[name])
			if err != nil {
				return fmt.Errorf("encoding devices of service %s: %w", id, err)
			}
			services = append(services, row{id, []any{p.NodeID, p.GPUType[name], devices}})
		}
	}
	// Which jobs and services may be placed is the job state machine's
	// rule; this pass only writes it in bulk.
	pending := inStates(job.FieldStatus, jobstate.From(jobstate.Placed))
	// Jobs before services, in the order cancelling takes its locks, so
	// the two never deadlock.
	n, err := update(ctx, tx, dialectName, job.Table, pending, cols(job.FieldStatusReason), starting, now)
	if err != nil {
		return fmt.Errorf("marking jobs starting: %w", err)
	}
	if n != len(starting) {
		return fmt.Errorf("marking jobs starting: %d of %d still pending: %w", n, len(starting), ErrRaced)
	}
	unplaced := unplacedSQL(service.FieldNodeID) + " AND " + inStates(service.FieldStatus, jobstate.ServiceFrom(jobstate.Placed))
	// Devices in the same statement as the node: a service is never on a
	// node without its devices. PostgreSQL types CASE results as text
	// unless told; the column is jsonb.
	devices := column{name: service.FieldGpuDevices}
	if dialectName == dialect.Postgres {
		devices.cast = "jsonb"
	}
	n, err = update(ctx, tx, dialectName, service.Table, unplaced, []column{{name: service.FieldNodeID}, {name: service.FieldGpuType}, devices}, services, now)
	if err != nil {
		return fmt.Errorf("placing services: %w", err)
	}
	if n != len(services) {
		return fmt.Errorf("placing services: %d of %d still unplaced: %w", n, len(services), ErrRaced)
	}
	var reasons []row
	for id, r := range waiting {
		if text := st.reasonText(r, queueName); text != st.reason[id] {
			reasons = append(reasons, row{id, []any{text}})
		}
	}
	for id, text := range st.invalid {
		if text != st.reason[id] {
			reasons = append(reasons, row{id, []any{text}})
		}
	}
	// A waiting job cancelled meanwhile keeps its own reason: no count check.
	waitingOnes := inStates(job.FieldStatus, jobstate.From(jobstate.Waiting))
	if _, err := update(ctx, tx, dialectName, job.Table, waitingOnes, cols(job.FieldStatusReason), reasons, now); err != nil {
		return fmt.Errorf("storing reasons: %w", err)
	}
	return nil
}

// inStates is the SQL condition that column holds one of states (the
// machine's enum values, never user input): "=" for one, which keeps
// SQLite on its usual plan, IN for more.
func inStates[S ~string](column string, states []S) string {
	if len(states) == 0 {
		return "FALSE"
	}
	quoted := make([]string, len(states))
	for i, st := range states {
		quoted[i] = "'" + string(st) + "'"
	}
	if len(quoted) == 1 {
		return column + " = " + quoted[0]
	}
	return fmt.Sprintf("%s IN (%s)", column, strings.Join(quoted, ", "))
}

// jsonList is ids as the JSON a Strings field stores; nil (SQL NULL) when
// there are none.
func jsonList(ids []string) (any, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	b, err := json.Marshal(ids)
	if err != nil {
		return nil, err
	}
	return string(b), nil
}

// reasonText is why a job waits. While some of the queue's online nodes
// are draining, it says so: a job that would fit on one of them should not
// read as too large or short of nodes without saying why.
func (st *state) reasonText(r scheduling.Reason, queueName string) string {
	var draining string
	switch len(st.draining) {
	case 0:
		return r.String(queueName)
	case 1:
		draining = "node " + st.draining[0] + " is draining"
	default:
		draining = fmt.Sprintf("nodes %s are draining", strings.Join(st.draining, ", "))
	}
	if r.Kind == scheduling.NoNodes {
		return fmt.Sprintf("queue %s has no online nodes taking new jobs: %s", queueName, draining)
	}
	return r.String(queueName) + "; " + draining
}
