package joblog

import (
	"context"
	"fmt"
	"time"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/ent/job"
	"github.com/levers9/levers9/ent/jobevent"
	"github.com/levers9/levers9/ent/logline"
	"github.com/levers9/levers9/internal/fault"
)

// Line is one stored output line of a job.
type Line struct {
	Seq     int64
	Service string
	Stream  string // stdout or stderr
	Time    time.Time
	Text    string
}

// Event is one stored transition of a job (Service nil) or of one of its
// services.
type Event struct {
	ID      string
	Service *string
	Status  job.Status
	Reason  string
	At      time.Time
}

// MaxPage is the most lines one read returns.
const MaxPage = 1000

// jobStatus returns the status of job jobID as the viewer of ctx sees it:
// ent privacy hides other tenants' jobs, which are NOT_FOUND like missing ones.
func jobStatus(ctx context.Context, c *ent.Client, jobID string) (job.Status, error) {
	j, err := c.Job.Query().Where(job.ID(jobID)).Select(job.FieldStatus).Only(ctx)
	if ent.IsNotFound(err) {
		return "", fault.Missing("job " + jobID)
	}
	if err != nil {
		return "", fmt.Errorf("reading job %s: %w", jobID, err)
	}
	return j.Status, nil
}

// Ended reports whether status is final.
func Ended(s job.Status) bool {
	return s == job.StatusComplete || s == job.StatusError || s == job.StatusCancelled
}

// Lines returns up to limit stored lines of job jobID with seq >= fromSeq, in
// order, as the viewer of ctx may see them.
func Lines(ctx context.Context, c *ent.Client, jobID string, fromSeq int64, limit int) ([]Line, error) {
	if limit < 0 || limit > MaxPage {
		return nil, fault.Invalid("first", "must be between 0 and %d", MaxPage)
	}
	if _, err := jobStatus(ctx, c, jobID); err != nil {
		return nil, err
	}
	return readLines(ctx, c, jobID, fromSeq, limit)
}

func readLines(ctx context.Context, c *ent.Client, jobID string, fromSeq int64, limit int) ([]Line, error) {
	rows, err := c.LogLine.Query().
		Where(logline.JobID(jobID), logline.SeqGTE(fromSeq)).
		Order(ent.Asc(logline.FieldSeq)).Limit(limit).All(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading logs of job %s: %w", jobID, err)
	}
	out := make([]Line, len(rows))
	for i, r := range rows {
		out[i] = Line{Seq: r.Seq, Service: r.Service, Stream: string(r.Stream), Time: r.Time, Text: r.Text}
	}
	return out, nil
}

// Events returns the stored events of job jobID in the order they happened.
func Events(ctx context.Context, c *ent.Client, jobID string) ([]Event, error) {
	if _, err := jobStatus(ctx, c, jobID); err != nil {
		return nil, err
	}
	return readEvents(ctx, c, jobID)
}

func readEvents(ctx context.Context, c *ent.Client, jobID string) ([]Event, error) {
	// IDs are time-ordered ULIDs: ordering by them is ordering by insertion.
	rows, err := c.JobEvent.Query().Where(jobevent.JobID(jobID)).
		Order(ent.Asc(jobevent.FieldID)).All(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading events of job %s: %w", jobID, err)
	}
	out := make([]Event, len(rows))
	for i, r := range rows {
		e := Event{ID: r.ID, Status: job.Status(r.Status), Reason: r.Reason, At: r.At}
		if r.Service != "" {
			s := r.Service
			e.Service = &s
		}
		out[i] = e
	}
	return out, nil
}
